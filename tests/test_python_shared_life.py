# SPDX-License-Identifier: Apache-2.0
"""test_python_shared_life.py: who removes an eht.ECSharedRegion's file, and when. A forked child of
the creator (explicit cleanup, collection or its own normal exit) never removes it; an old creator's
cleanup leaves the region a restarted engine made under the same name; a creator that exits without
cleanup, the object still held by a module that is not __main__, leaves nothing (`eht regions list`
finds nothing); a cleanup whose file is already gone logs no traceback; _mmap_path is the file while
the creator lives; both pre-fault ways (MADV_POPULATE_WRITE, and the fallback where the kernel refuses
it: EHT_TEST_FAULT=populate-madvise) allocate the whole region; eht.Region.remove() follows the same rule;
as root, a region another uid planted under the name is refused naming it. No torch needed."""
import errno
import os
import subprocess
import sys
import tempfile
import textwrap

import pyutil

SRC = os.environ.get("EHT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
check = pyutil.Checks()


def run_script(code, d, env=None, files=None):
    """Runs code as a fresh interpreter in d (files: {name: text} written there first); (rc, stderr)."""
    for name, text in (files or {}).items():
        with open(os.path.join(d, name), "w") as f:
            f.write(textwrap.dedent(text))
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([d, os.path.join(SRC, "python")]), **(env or {}))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=d, env=e, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def files_of(d, engine):
    return [f for f in os.listdir(d) if engine in f]


def forked_child(eht, d):
    engine = "fork%d" % os.getpid()
    r = eht.ECSharedRegion(engine, 8, 4096, dir=d)
    check(r.is_creator and r._is_creator and os.path.exists(r._mmap_path), "creator and its file")
    check(os.path.basename(r._mmap_path) == "eht.vllm_ec_" + engine, "_mmap_path: %s" % r._mmap_path)
    r.blocks[1, 2] = 7
    for way in ("cleanup", "collect"):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                if r.is_creator or r._is_creator:
                    code = 2
                if way == "cleanup":
                    r.cleanup()
                else:
                    globals().pop("r", None)
            except BaseException:  # noqa: BLE001
                code = 3
            os._exit(code)
        _, st = os.waitpid(pid, 0)
        check(os.waitstatus_to_exitcode(st) == 0, "forked child (%s): exit %d" % (way, st))
        check(os.path.exists(r._mmap_path), "a forked child's %s removed the creator's file" % way)
    check(r.blocks[1, 2] == 7, "the creator's view after the children")
    r.cleanup()
    check(not files_of(d, engine), "creator's cleanup left %s" % files_of(d, engine))

    # A forked child that exits normally (atexit runs its inherited finalizer): the file stays
    # until the creator's own exit.
    rc, out = run_script("""
        import os, sys, eht
        r = eht.ECSharedRegion("forkexit", 8, 4096, dir=%r)
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit of the child: atexit, module teardown
        os.waitpid(pid, 0)
        print("after child:", os.path.exists(r._mmap_path))
    """ % d, d)
    check(rc == 0 and "after child: True" in out, "fork + normal child exit: %d %s" % (rc, out))
    check(not files_of(d, "forkexit"), "the creator's exit left %s" % files_of(d, "forkexit"))


def restarted(eht, d):
    """The name removed and made again (a restarted engine): the old creator's cleanup leaves it."""
    engine = "restart%d" % os.getpid()
    old = eht.ECSharedRegion(engine, 8, 4096, dir=d)
    os.unlink(old._mmap_path)  # an operator (or gc) removed the name
    new = eht.ECSharedRegion(engine, 8, 4096, dir=d)
    check(new.is_creator, "the restarted engine creates a fresh region")
    new.blocks[0, 0] = 5
    old.cleanup()
    check(os.path.exists(new._mmap_path), "the old creator's cleanup removed the new region")
    opener = eht.ECSharedRegion(engine, 8, 4096, dir=d)
    check(not opener.is_creator and opener.blocks[0, 0] == 5, "an opener maps the new region")
    opener.cleanup()
    check(os.path.exists(new._mmap_path), "an opener's cleanup removed the region")
    new.cleanup()
    check(not files_of(d, engine), "new creator's cleanup left %s" % files_of(d, engine))


def exit_without_cleanup(d):
    """Held by a module that is not __main__ at interpreter exit: still removed, without a traceback."""
    mod = """
        import eht
        REGION = eht.ECSharedRegion("modexit", 16, 4096, dir=%r)
        REGION.blocks[3, 3] = 1
    """ % d
    rc, out = run_script("""
        import logging, os
        logging.basicConfig(level=logging.DEBUG)
        import holder
        print("exists:", os.path.exists(holder.REGION._mmap_path))
    """, d, files={"holder.py": mod})
    check(rc == 0 and "exists: True" in out, "module-held creator: %d %s" % (rc, out))
    check(not files_of(d, "modexit"), "a creator's exit without cleanup left %s" % files_of(d, "modexit"))
    check("Traceback" not in out and "meta_path" not in out, "exit logged: %s" % out)
    cli = os.environ.get("EHT_CLI")
    if cli:
        p = subprocess.run([cli, "regions", "list", "--dir", d], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and "modexit" not in p.stdout, "eht regions list: %s" % p.stdout)

    # Its file already gone when it cleans up, twice over (cleanup, then exit): no traceback, and
    # at most one line about it.
    rc, out = run_script("""
        import logging, os, eht
        logging.basicConfig(level=logging.DEBUG)
        rs = [eht.ECSharedRegion("gone" + str(i), 4, 4096, dir=%r) for i in range(3)]
        for r in rs:
            os.unlink(r._mmap_path)
        rs[0].cleanup()
        rs[0].cleanup()
    """ % d, d)
    check(rc == 0 and "Traceback" not in out, "cleanup of removed files: %d %s" % (rc, out))
    lines = [ln for ln in out.splitlines() if "created EC region" not in ln]
    check(all(sum("gone%d" % i in ln for ln in lines) <= 1 for i in range(3)), "one line per object at most: %s" % out)


def prefault(d):
    """Both ways allocate every page of the creator's region before it is handed out."""
    for fault, want in ((None, False), ("populate-madvise", True)):
        env = dict({"EHT_TEST_FAULT": fault} if fault else {}, EHT_LOG="warn")
        rc, out = run_script("""
            import logging, os, eht
            logging.basicConfig(level=logging.WARNING)
            r = eht.ECSharedRegion("pf", 64, 65536, dir=%r)
            st = os.stat(r._mmap_path)
            print("allocated", st.st_blocks * 512 >= 64 * 65536)
            r.cleanup()
        """ % d, d, env=env)
        check(rc == 0 and "allocated True" in out, "pre-fault (%s): %s" % (fault, out))
        said = "MADV_POPULATE_WRITE unsupported" in out
        check(said == want or (fault is None and said), "fallback said (%s): %s" % (fault, out))


def region_remove(eht, d):
    os.environ["EHT_SHM_DIR"] = d
    eht._reload_settings()  # libeht reads its settings once
    try:
        name = "rr%d" % os.getpid()
        r = eht.Region(name, 8192)
        r.mark_ready()
        check(r.path == os.path.join(d, "eht." + name), "Region.path %s" % r.path)
        pid = os.fork()
        if pid == 0:
            try:
                r.remove()
                code = 1
            except eht.EhtError as exc:
                code = 0 if exc.errno == errno.EPERM else 2
            os._exit(code)
        _, st = os.waitpid(pid, 0)
        check(os.waitstatus_to_exitcode(st) == 0 and os.path.exists(r.path), "a forked child removed a Region")
        os.unlink(r.path)
        again = eht.Region(name, 8192)
        again.mark_ready()
        check(r.remove() is False and os.path.exists(again.path), "old Region.remove() removed the new one")
        check(again.remove() is True and not os.path.exists(again.path), "Region.remove()")
        r.close()
        again.close()
    finally:
        del os.environ["EHT_SHM_DIR"]
        eht._reload_settings()


def foreign(eht, d):
    """Root only: another uid's planted ready 0666 region under the name is refused, naming it."""
    if os.geteuid() != 0:
        print("not root: the other-uid case is skipped")
        return
    os.chmod(d, 0o1777)
    engine = "planted%d" % os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            r = eht.ECSharedRegion(engine, 8, 4096, dir=d)
            r.blocks[0, 0] = 66
            os.chmod(r._mmap_path, 0o666)
            code = 0
        finally:
            os._exit(code)  # no cleanup: the planted file stays
    _, st = os.waitpid(pid, 0)
    check(os.waitstatus_to_exitcode(st) == 0, "planting as uid 65534")
    try:
        eht.ECSharedRegion(engine, 8, 4096, dir=d)
        check(False, "another uid's region was mapped")
    except eht.EhtError as exc:
        check(exc.errno == errno.EPERM and "uid 65534" in str(exc) and "0666" in str(exc), str(exc))
    for f in files_of(d, engine):
        os.unlink(os.path.join(d, f))


def main():
    os.environ.pop("EHT_LOG", None)  # the scripts' lines are counted at libeht's default level
    eht = pyutil.import_eht_cpu()
    if eht is None:
        return 77
    with tempfile.TemporaryDirectory() as d:
        forked_child(eht, d)
        restarted(eht, d)
        exit_without_cleanup(d)
        prefault(d)
        region_remove(eht, d)
        foreign(eht, d)
    print("PASS" if not check.failures else "FAIL: %d" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
