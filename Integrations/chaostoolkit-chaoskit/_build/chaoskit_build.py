"""A PEP 517 build backend in the Python standard library alone.

`pip install --no-build-isolation ./Integrations/chaostoolkit-chaoskit` must work on a
machine without network. setuptools before 70.1 cannot build a wheel without the `wheel`
package, which such a machine may lack; this package is one pure-Python module folder, so
its wheel (a zip with a .dist-info folder, PEP 427) is written here directly from the
`[project]` table of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "chaoskit"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["project"]


def _names(project):
    name = project["name"]
    return name, name.replace("-", "_"), project["version"]


def _metadata(project):
    name, _, version = _names(project)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {project.get('description', '')}",
        f"License: {project.get('license', {}).get('text', '')}",
    ]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    readme = project.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as handle:
            body = handle.read()
    return "\n".join(lines) + "\n\n" + body


def _sources():
    for folder, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(files):
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                yield path, os.path.relpath(path, ROOT).replace(os.sep, "/")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _wheel(wheel_directory, editable):
    project = _project()
    _, dist, version = _names(project)
    info = f"{dist}-{version}.dist-info"
    files = []
    if editable:
        files.append((f"{dist}.pth", (ROOT + "\n").encode()))
    else:
        for path, name in _sources():
            with open(path, "rb") as handle:
                files.append((name, handle.read()))
    files.append((f"{info}/METADATA", _metadata(project).encode("utf-8")))
    files.append(
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: chaoskit_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    )
    files.append((f"{info}/top_level.txt", f"{PACKAGE}\n".encode()))
    record = [_record_line(n, d) for n, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    _, dist, version = _names(project)
    base = f"{dist}-{version}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as archive:
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".pytest_cache") and not d.endswith(".egg-info"))
            for file in sorted(files):
                path = os.path.join(folder, file)
                archive.add(path, arcname=f"{base}/{os.path.relpath(path, ROOT)}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata(project).encode("utf-8")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return filename
