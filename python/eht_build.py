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
import subprocess
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
        if section == "project.scripts" and m:  # name = "module:function"
            strings = re.findall(r'"([^"]*)"', m.group(2))
            proj.setdefault("scripts", {})[m.group(1)] = strings[0] if strings else ""
            continue
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


# The libraries of glibc: every ELF file in the wheel may need these and nothing else outside the wheel
# (the CUDA driver is dlopen'ed at run time, never needed).
GLIBC_LIBS = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2",
              "ld-linux-aarch64.so.1")
MANYLINUX_MAX = 35  # Ubuntu 22.04's glibc 2.35: what engines' images run


def _glibc_bound():
    """The newest glibc a wheel may need: 35, or $EHT_WHEEL_MAX_GLIBC (a build host newer than the
    images the wheel is for can only make a wheel for its own glibc or newer: say so to build one)."""
    v = os.environ.get("EHT_WHEEL_MAX_GLIBC", "")
    return int(v) if v.isdigit() else MANYLINUX_MAX


def elf_needed(path):
    """The DT_NEEDED entries of an ELF file (readelf -d)."""
    out = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def elf_glibc_max(path):
    """The newest GLIBC_2.X version an ELF file needs (readelf -V's version needs), as X."""
    out = subprocess.run(["readelf", "-V", "-W", path], capture_output=True, text=True, check=True).stdout
    return max([int(x) for x in re.findall(r"Name: GLIBC_2\.(\d+)", out)] or [0])


def _resolve(path, soname):
    """Where the loader finds soname for path (ldd)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    m = re.search(r"^\s*%s => (\S+)" % re.escape(soname), out, re.M)
    if not m or not os.path.isfile(m.group(1)):
        raise RuntimeError("eht_build: %s needs %s, which the loader does not find" % (path, soname))
    return m.group(1)


def bundle(elves):
    """(arcname, path) of every library the ELF files need beyond glibc, found as the loader finds
    them and carried beside them (they find it through RUNPATH $ORIGIN); each carried one may itself
    need only glibc. Refuses libstdc++ and the CUDA driver."""
    out, seen = [], set()
    for path in elves:
        for so in elf_needed(path):
            if so in GLIBC_LIBS or so in seen:
                continue
            if so.startswith(("libstdc++", "libcuda", "libnvidia")):
                raise RuntimeError("eht_build: %s needs %s: the wheel's C carries no libstdc++ and loads the driver "
                                   "at run time" % (path, so))
            real = _resolve(path, so)
            extra = [n for n in elf_needed(real) if n not in GLIBC_LIBS]
            if extra:
                raise RuntimeError("eht_build: %s (carried for %s) needs %s beyond glibc" % (real, path, extra))
            seen.add(so)
            out.append((_PKG + "/" + so, real))
    return out


def _tag(elves):
    """py3-none-any without ELF files; else manylinux_2_X for the newest glibc version they need."""
    if not elves:
        return "py3-none-any"
    arch = platform.machine().replace("-", "_").replace(".", "_")
    x = max(elf_glibc_max(p) for p in elves)
    bound = _glibc_bound()
    if x > bound:
        raise RuntimeError("eht_build: the wheel's ELF files need GLIBC_2.%d, newer than 2.%d (Ubuntu 22.04's): build "
                           "it on an older distribution (Debian 12 gives 2.34), or set EHT_WHEEL_MAX_GLIBC=%d for a "
                           "wheel for this glibc and newer only" % (x, bound, x))
    return "py3-none-manylinux_2_%d_%s" % (max(x, 17), arch)


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
        proj = _project()
        eps = dict(proj.get("entry-points") or {})
        if proj.get("scripts"):  # the `eht` command, on PATH after install
            eps["console_scripts"] = proj["scripts"]
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
    """The module; with EHT_WHEEL_LIB (libeht.so.0 of `make wheel`) also libeht, with EHT_WHEEL_CLI the
    eht tool (run by the `eht` console script and `python -m eht`), and what they need beyond glibc."""
    lib, cli = os.environ.get("EHT_WHEEL_LIB"), os.environ.get("EHT_WHEEL_CLI")
    for name, path in (("EHT_WHEEL_LIB", lib), ("EHT_WHEEL_CLI", cli)):
        if path and not os.path.isfile(path):
            raise RuntimeError("eht_build: %s=%s is not a file" % (name, path))
    elves = [(_PKG + "/libeht.so.0", lib)] if lib else []
    if cli:
        elves.append((_PKG + "/eht", cli))
    carried = bundle([p for _, p in elves]) if elves else []
    tag = _tag([p for _, p in elves + carried])
    w = _Wheel(wheel_directory, tag)
    for arc, path in _package_files():
        w.add(arc, _read(path))
    for arc, path in elves + carried:
        w.add(arc, _read(path), 0o755)
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
