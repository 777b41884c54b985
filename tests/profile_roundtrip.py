"""What "the same run" means when a run profile comes back out of the database as a RunProfile:
equal after putting each PE's category rows largest first, as RunProfile keeps them (their
order carries no meaning).  Numbers compare by value, so 5 and 5.0 are the same, as they are
to every stage after the database."""

import copy


def normalized(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for pe in doc["pes"]:
        if "categories" in pe:
            pe["categories"].sort(key=lambda c: (-c["cpu_s"], c["access"]))
    doc["pes"].sort(key=lambda p: p["pe"])
    return doc
