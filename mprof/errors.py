"""The toolkit's own error type: every expected failure is reported through it."""


class MprofError(Exception):
    """An error caused by the user's input or environment, printed without a traceback."""


class SourceError(MprofError):
    """An error located in an input file: printed as `file:line:column: message`."""

    def __init__(self, path, line, column, message, source_line=None):
        self.path = path
        self.line = line
        self.column = column
        self.message = message
        self.source_line = source_line
        super().__init__(self.format())

    def format(self):
        text = f"{self.path}:{self.line}:{self.column}: {self.message}"
        if self.source_line is not None:
            caret = " " * (max(self.column, 1) - 1) + "^"
            text += f"\n{self.source_line.rstrip()}\n{caret}"
        return text


def line_column(text: str, offset: int) -> tuple[int, int]:
    """Line and column (1-based, columns in characters) of `offset` in `text`: the place a
    SourceError names."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


MESSAGE_LIMIT = 4000


def bounded_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message stays readable when it quotes a huge input (a 10 MB name): its middle is
    left out beyond `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}...[{len(text) - limit} characters left out]...{text[-half:]}"
