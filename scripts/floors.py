"""pyproject.toml -> pip constraints pinning every direct dependency (core and extras) to its floor:
`pandas>=2.2,<4` becomes `pandas==2.2`. scripts/test-floors.sh installs them and runs the unit tests,
so the floors pyproject.toml states are versions that were tested. A dependency without a floor is
an error: it would be untested at its lowest."""
import re
import sys
import tomllib

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*(.*)$")


def floors(pyproject: dict) -> list[str]:
    project = pyproject["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    pins, missing = {}, []
    for req in requirements:
        name, _, spec = REQUIREMENT.match(req.split(";")[0]).groups()
        if name.lower() == project["name"]:
            continue  # hostnet[lab]: its own extra, listed on its own
        floor = re.search(r">=\s*([0-9][^,\s]*)", spec)
        if not floor:
            missing.append(req)
            continue
        pins[name.lower()] = floor.group(1)
    if missing:
        raise SystemExit(f"no floor (>=) for: {', '.join(missing)}")
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    with open(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml", "rb") as f:
        print("\n".join(floors(tomllib.load(f))))
