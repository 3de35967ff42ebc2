"""Print the lowest versions pyproject.toml allows, as `name==version` lines: the runtime
dependencies and the extras named on the command line (e.g. `test`). Used by .ci/floors."""
import re
import sys
import tomllib

_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+(?:\[[^\]]*\])?)\s*([^;]*)(;.*)?$")


def floor(requirement):
    """`numpy>=2,<2.5` -> `numpy==2`; a requirement without a lower bound is kept as is."""
    name, spec, marker = _REQ.match(requirement).groups()
    low = re.search(r">=\s*([0-9][^,\s]*)", spec)
    return f"{name}=={low.group(1)}{marker or ''}" if low else requirement


def main(extras):
    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    for r in reqs:
        if not r.startswith(project["name"] + "["):   # a self-reference: its own lines
            print(floor(r))


if __name__ == "__main__":
    main(sys.argv[1:])
