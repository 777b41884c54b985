"""`make demo`, step 3: each PIPE run's model total against its measured total, then the path
of the fastest run (least measured total: CPU time summed over PEs, the model's measure),
which the demo reports in full.

    python scripts/demo_runs.py MODEL.json RUN.json [RUN.json ...]
"""

import sys

from mprof.db.validate import load_profile
from mprof.model import load_model
from mprof.report.build import build_report


def main(model_path: str, runs: list[str]) -> None:
    model = load_model(model_path)
    measured = {}
    for path in runs:
        doc = load_profile(path)
        report = build_report(doc, model, source=path, model_path=model_path)
        measured[path] = report.measured_total
        print(
            f"{path}: model {report.model_total:.4f} s, measured {report.measured_total:.4f} s"
            f" ({report.measure}), model / measured = "
            f"{report.model_total / report.measured_total:.3f}",
            file=sys.stderr,
        )
    print(min(runs, key=measured.get))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
