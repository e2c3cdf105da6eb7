"""A PEP 517 build backend for wf-client, in the standard library only.

pip installs a project from source by asking its build backend for a wheel.
The usual backend, setuptools, is not in a fresh ``python3 -m venv`` on every
Python (3.12 dropped it), and setuptools before 70.1 also needs ``wheel``,
which no venv has; without a reachable package index ``pip install`` then
fails before it starts. This backend needs nothing but the interpreter, so
``pip install --no-index ./clients/python`` works in a plain venv, offline:
pip's isolated build environment installs nothing (``requires = []``) and
runs this module from the source tree (``backend-path``).

It builds a pure-Python wheel (``py3-none-any``) of ``src/wf_client``, an
sdist, and an editable wheel (a ``.pth`` file naming ``src``). Its archives
are reproducible: entries sorted, every time stamp 1980-01-01.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "wf_client"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

__all__ = [
    "build_wheel",
    "build_sdist",
    "build_editable",
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "get_requires_for_build_editable",
]


def _project():
    """Return the [project] table of pyproject.toml (the keys this backend uses)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    try:
        import tomllib  # Python 3.11 and newer
    except ImportError:
        return _simple_project(text)
    return tomllib.loads(text)["project"]


def _simple_project(text):
    """Read the [project] table's one-line string, list and inline-table values
    (what pyproject.toml holds) on Pythons without tomllib."""
    project, inside = {}, False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == "[project]"
            continue
        m = re.match(r'^([A-Za-z-]+)\s*=\s*(.+)$', line)
        if not inside or not m:
            continue
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            project[key] = re.match(r'^"((?:[^"\\]|\\.)*)"', value).group(1)
        elif value.startswith("["):
            project[key] = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
        elif value.startswith("{"):
            project[key] = dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', value))
    return project


def _names(project):
    """The distribution's normalized name (PEP 503, with underscores) and version."""
    return re.sub(r"[-_.]+", "_", project["name"]).lower(), project["version"]


def _metadata(project):
    """The core metadata (METADATA, PKG-INFO) of the distribution."""
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + project["name"],
        "Version: " + project["version"],
    ]
    if project.get("description"):
        lines.append("Summary: " + project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: " + project["requires-python"])
    licence = project.get("license")
    if isinstance(licence, dict) and licence.get("text"):
        lines.append("License: " + licence["text"])
    for classifier in project.get("classifiers", []):
        lines.append("Classifier: " + classifier)
    for dependency in project.get("dependencies", []):
        lines.append("Requires-Dist: " + dependency)
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """The package's files under src/, as (archive name, path), sorted."""
    out = []
    base = os.path.join(ROOT, "src")
    for folder, dirs, files in os.walk(os.path.join(base, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            out.append((os.path.relpath(path, base).replace(os.sep, "/"), path))
    return sorted(out)


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _write_wheel(wheel_directory, entries):
    """Write a wheel of entries ((archive name, bytes)) with its dist-info and
    RECORD, and return its file name."""
    project = _project()
    name, version = _names(project)
    dist_info = "%s-%s.dist-info" % (name, version)
    entries = list(entries) + [
        (dist_info + "/METADATA", _metadata(project).encode("utf-8")),
        (dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: wf_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = "".join("%s,%s,%d\n" % (n, _record_hash(d), len(d)) for n, d in entries)
    record += dist_info + "/RECORD,,\n"
    entries.append((dist_info + "/RECORD", record.encode("utf-8")))
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        for n, data in entries:
            info = zipfile.ZipInfo(n, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return filename


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 517: build the wheel of src/wf_client into wheel_directory."""
    entries = []
    for n, path in _package_files():
        with open(path, "rb") as f:
            entries.append((n, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth file puts this checkout's src on sys.path."""
    src = os.path.join(ROOT, "src") + "\n"
    return _write_wheel(wheel_directory, [("_%s.pth" % PACKAGE, src.encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    """PEP 517: the source distribution: pyproject.toml, README.md, the
    backend, src and tests, with PKG-INFO."""
    project = _project()
    name, version = _names(project)
    top = "%s-%s" % (name, version)
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("README.md", os.path.join(ROOT, "README.md")),
             ("backend/wf_build.py", os.path.abspath(__file__))]
    files += [("src/" + n, p) for n, p in _package_files()]
    tests = os.path.join(ROOT, "tests")
    if os.path.isdir(tests):
        files += sorted(("tests/" + n, os.path.join(tests, n)) for n in os.listdir(tests) if n.endswith(".py"))
    filename = top + ".tar.gz"

    def add(tar, arcname, data):
        info = tarfile.TarInfo(top + "/" + arcname)
        info.size, info.mode, info.mtime = len(data), 0o644, 315532800
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "PKG-INFO", _metadata(project).encode("utf-8"))
        for arcname, path in files:
            with open(path, "rb") as f:
                add(tar, arcname, f.read())
    return filename


def get_requires_for_build_wheel(config_settings=None):
    """PEP 517: nothing beyond the standard library."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """PEP 517: nothing beyond the standard library."""
    return []


def get_requires_for_build_editable(config_settings=None):
    """PEP 660: nothing beyond the standard library."""
    return []
