# SPDX-License-Identifier: Apache-2.0
"""eht_build: the PEP 517 build backend of the eht Python package, standard library only.

The package is pure Python (ctypes over libeht), so making its wheel is zipping eht/ with its
metadata. A backend that needs nothing means `pip install ./python` works offline: pip's build
isolation has nothing to download (setuptools' backend needed setuptools and, before setuptools 70.1,
wheel, which a plain venv lacks: "invalid command 'bdist_wheel'").

Set EHT_WHEEL_LIB=/path/to/libeht.so.0 to carry the library inside the wheel (`make wheel`): the
wheel is then tagged for this platform and eht/_libfind.py finds the library next to the module.
"""
import base64
import hashlib
import io
import os
import platform
import re
import tarfile
import time
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG = "eht"


def _project():
    """The [project] table of pyproject.toml: tomllib where Python has it (3.11+), else the subset
    this file uses (key = "string" and key = ["string", ...] lines)."""
    with open(os.path.join(_HERE, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # type: ignore[import-not-found]

        return tomllib.loads(raw.decode("utf-8")).get("project", {})
    except ImportError:
        pass
    proj, section = {}, None
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
            continue
        m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*(.*)$', line)
        g = re.match(r'^project\.entry-points\."([^"]+)"$', section or "")
        if g and m:  # [project.entry-points."group"] name = "module:function"
            strings = re.findall(r'"([^"]*)"', m.group(2))
            proj.setdefault("entry-points", {}).setdefault(g.group(1), {})[m.group(1)] = strings[0] if strings else ""
            continue
        if section == "project" and m:
            val = m.group(2)
            strings = re.findall(r'"([^"]*)"', val)
            if val.startswith("{"):  # license = {text = "..."}
                proj[m.group(1)] = {"text": strings[-1]} if strings else {}
            else:
                proj[m.group(1)] = strings if val.startswith("[") else (strings[0] if strings else val)
    return proj


def _version():
    with open(os.path.join(_HERE, _PKG, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("eht_build: no __version__ in eht/_version.py")
    return m.group(1)


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p.get("name", _PKG), "Version: " + _version()]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: " + lic["text"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: " + c)
    for extra, reqs in (p.get("optional-dependencies") or {}).items():
        lines.append("Provides-Extra: " + extra)
        for r in reqs:
            lines.append('Requires-Dist: %s ; extra == "%s"' % (r, extra))
    readme = os.path.join(_HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """(path in the wheel, file on disk) for the module: .py, .pyi and py.typed."""
    out = []
    for name in sorted(os.listdir(os.path.join(_HERE, _PKG))):
        if name.endswith((".py", ".pyi")) or name == "py.typed":
            out.append((_PKG + "/" + name, os.path.join(_HERE, _PKG, name)))
    return out


def _tag(lib):
    if not lib:
        return "py3-none-any"
    return "py3-none-linux_" + platform.machine().replace("-", "_").replace(".", "_")


class _Wheel:
    def __init__(self, directory, tag):
        self.dist = "%s-%s" % (_PKG, _version())
        self.name = "%s-%s.whl" % (self.dist, tag)
        self.path = os.path.join(directory, self.name)
        self.zf = zipfile.ZipFile(self.path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=time.gmtime(_epoch())[:6])
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, tag):
        di = self.dist + ".dist-info/"
        self.add(di + "METADATA", _metadata().encode("utf-8"))
        self.add(di + "WHEEL", ("Wheel-Version: 1.0\nGenerator: eht_build\nRoot-Is-Purelib: %s\nTag: %s\n"
                                % ("true" if tag.endswith("-any") else "false", tag)).encode())
        self.add(di + "top_level.txt", (_PKG + "\n").encode())
        eps = _project().get("entry-points") or {}
        if eps:  # e.g. vLLM's general plug-ins find eht.vllm:register here
            text = "".join("[%s]\n%s\n" % (group, "".join("%s = %s\n" % kv for kv in sorted(names.items())))
                           for group, names in sorted(eps.items()))
            self.add(di + "entry_points.txt", text.encode())
        license_file = os.path.join(_HERE, "..", "LICENSE")
        if os.path.exists(license_file):
            with open(license_file, "rb") as f:
                self.add(di + "LICENSE", f.read())
        self.record.append(di + "RECORD,,")
        info = zipfile.ZipInfo(di + "RECORD", date_time=time.gmtime(_epoch())[:6])
        info.external_attr = 0o100644 << 16
        self.zf.writestr(info, "\n".join(self.record) + "\n")
        self.zf.close()
        return self.name


def _epoch():
    # Reproducible archives; zip cannot hold dates before 1980.
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 / PEP 660 hooks
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = os.environ.get("EHT_WHEEL_LIB")
    if lib and not os.path.isfile(lib):
        raise RuntimeError("eht_build: EHT_WHEEL_LIB=%s is not a file" % lib)
    tag = _tag(lib)
    w = _Wheel(wheel_directory, tag)
    for arc, path in _package_files():
        w.add(arc, _read(path))
    if lib:
        w.add(_PKG + "/libeht.so.0", _read(lib), 0o755)
    return w.close(tag)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file that puts this folder on sys.path: edits to eht/ apply without reinstalling.
    tag = _tag(None)
    w = _Wheel(wheel_directory, tag)
    w.add("__editable__.eht.pth", (_HERE + "\n").encode())
    return w.close(tag)


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (_PKG, _version())
    name = base + ".tar.gz"
    files = [("pyproject.toml", os.path.join(_HERE, "pyproject.toml")),
             ("eht_build.py", os.path.join(_HERE, "eht_build.py")),
             ("README.md", os.path.join(_HERE, "README.md"))] + _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        def add(arc, data):
            ti = tarfile.TarInfo(base + "/" + arc)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, _epoch()
            tf.addfile(ti, io.BytesIO(data))
        p = _metadata().split("\n\n", 1)[0] + "\n"
        add("PKG-INFO", p.encode("utf-8"))
        for arc, path in files:
            if os.path.exists(path):
                add(arc, _read(path))
    return name
