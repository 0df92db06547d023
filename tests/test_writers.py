"""One guard for every writer: no writer replaces a file webrank has read, by
any name; a replaced file keeps its mode; SIGTERM and SIGHUP during a write leave no
temporary file behind, as Ctrl-C does."""

from __future__ import annotations

import os
import selectors
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from package_path import WEBRANK_PATH

import webrank
from webrank.cli import main
from webrank.errors import OverwriteError, WebrankError

SRC = WEBRANK_PATH
CYCLE = "0 1\n1 2\n2 0\n2 3\n"


def run(capsys, *args) -> tuple[int, str]:
    """``webrank ARGS`` in this process: (exit code, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code or 0
    return code, capsys.readouterr().err


def one_line(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("webrank: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, err)


def leftovers(folder: Path) -> list[str]:
    """Temporary files of atomic_write left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def target_of(kind: str, tmp_path: Path, monkeypatch, graph: Path) -> Path:
    """The name by which a writer is pointed at ``graph``."""
    if kind == "absolute":
        return graph.resolve()
    if kind == "relative":
        monkeypatch.chdir(graph.parent)
        return Path(graph.name)
    if kind == "symlink":
        link = tmp_path / f"link{graph.suffix}"
        link.symlink_to(graph)
        return link
    link = tmp_path / f"hard{graph.suffix}"
    os.link(graph, link)
    return link


KINDS = ["absolute", "relative", "symlink", "hardlink"]


# ------------------------------------------------------------------ never over an input
@pytest.mark.parametrize("kind", KINDS)
def test_result_save_over_its_graph_file_is_refused(tmp_path, monkeypatch, kind):
    """PageRankResult.save onto the edge list the graph came from, by any name: refused
    in one line naming the file; the edge list is intact and no temporary file is left."""
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    r = webrank.pagerank(webrank.load(g), device="cpu")
    target = target_of(kind, tmp_path, monkeypatch, g)
    with pytest.raises(OverwriteError, match="would destroy the input") as e:
        r.save(target)
    assert isinstance(e.value, ValueError) and isinstance(e.value, WebrankError)
    assert str(target) in str(e.value) and "\n" not in str(e.value)
    assert g.read_text() == CYCLE and leftovers(tmp_path) == []


def test_a_graph_read_through_a_link_is_guarded_under_its_real_name(tmp_path):
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    (tmp_path / "link.txt").symlink_to(g)
    r = webrank.pagerank(webrank.load(tmp_path / "link.txt"), device="cpu")
    with pytest.raises(OverwriteError):
        r.save(g)
    assert g.read_text() == CYCLE


def test_personalized_save_over_its_graph_file_is_refused(tmp_path):
    g = tmp_path / "g.csv"
    g.write_text(CYCLE)
    r = webrank.personalized_pagerank(str(g), [[0], [1]], device="cpu")
    with pytest.raises(OverwriteError, match=r"g\.csv"):
        r.save(g)
    assert g.read_text() == CYCLE


def test_graph_writers_refuse_the_file_they_read(tmp_path):
    from webrank.io import save_graph, write_edgelist

    text = tmp_path / "g.txt"
    text.write_text(CYCLE)
    g = webrank.load(text)
    save_graph(g, tmp_path / "g.npz")  # a new name: written
    cached = webrank.load(tmp_path / "g.npz")
    before = (tmp_path / "g.npz").read_bytes()
    with pytest.raises(OverwriteError):
        save_graph(cached, tmp_path / "g.npz")
    with pytest.raises(OverwriteError):
        write_edgelist(g, text)
    assert (tmp_path / "g.npz").read_bytes() == before and text.read_text() == CYCLE


def test_both_files_of_a_bvgraph_are_guarded(tmp_path):
    from test_bvgraph import encode_bvgraph

    from webrank.files.atomic import atomic_write

    base = tmp_path / "g"
    encode_bvgraph(base, [[1], [2], [0]])
    webrank.load(f"{base}.graph")
    for ext in (".graph", ".properties"):
        with pytest.raises(OverwriteError), atomic_write(f"{base}{ext}") as f:
            f.write(b"")
    assert webrank.load(f"{base}.properties").n == 3


def test_a_new_name_or_a_removed_input_may_be_written(tmp_path):
    """The guard refuses inputs only: another name beside the input is written, and so
    is the input's name once the file has been removed (a deliberate replacement)."""
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    r = webrank.pagerank(webrank.load(g), device="cpu")
    r.save(tmp_path / "ranks.txt")
    g.unlink()
    r.save(g)
    assert webrank.result.load_scores(g)[1].size == 4


@pytest.mark.parametrize("kind", KINDS)
def test_cli_output_onto_its_graph_is_refused(tmp_path, monkeypatch, capsys, kind):
    """The CLI's check before any work is the same guard (this passed before the guard
    was shared; it keeps the CLI's behaviour)."""
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    target = target_of(kind, tmp_path, monkeypatch, g)
    code, err = run(capsys, "rank", g, "-o", target, "--device", "cpu")
    assert code == 2
    one_line(err, "is the input", "would destroy the input")
    assert g.read_text() == CYCLE and leftovers(tmp_path) == []


def test_cli_distributed_output_directory_holding_its_input_is_refused(tmp_path, capsys):
    """`rank out/part-00000.parquet --distributed -o out` used to write the scores' part
    over the edge file it read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    out.mkdir()
    edges = out / "part-00000.parquet"
    pq.write_table(pa.table({"src": [0, 1, 2, 2], "dst": [1, 2, 0, 3]}), edges)
    before = edges.read_bytes()
    code, err = run(capsys, "rank", edges, "--distributed", "--device", "cpu", "-o", out)
    assert code == 2
    one_line(err, "holds the input")
    assert edges.read_bytes() == before


def test_distributed_score_writer_refuses_an_input_part(tmp_path):
    """write_scores clears old parts before writing: never a part it read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from webrank.distributed.comm import LocalComm
    from webrank.distributed.inputs import read_edge_files, write_scores

    out = tmp_path / "out"
    out.mkdir()
    edges = out / "part-00003.parquet"  # a part index this one-rank run does not have
    pq.write_table(pa.table({"src": [0, 1, 2, 2], "dst": [1, 2, 0, 3]}), edges)
    read_edge_files(edges, LocalComm())
    with pytest.raises(OverwriteError):
        write_scores(out, LocalComm(), 0, np.full(4, 0.25))
    assert edges.exists()


# ------------------------------------------------------------------ the mode is kept
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
def test_replacing_a_file_keeps_its_mode(tmp_path, mode):
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    r = webrank.pagerank(webrank.load(g), device="cpu")
    for name in ("ranks.csv", "ranks.npy"):
        out = tmp_path / name
        out.write_text("old")
        out.chmod(mode)
        r.save(out)
        assert stat.S_IMODE(out.stat().st_mode) == mode, name
        assert out.read_bytes() != b"old"


# ------------------------------------------------------------------ signals
def test_an_interrupt_while_the_temporary_file_is_made_leaves_nothing(tmp_path, monkeypatch):
    """A signal handler raising right after the temporary file was created (before the
    writer knew its name, with mkstemp) used to leave it behind."""
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    r = webrank.pagerank(webrank.load(g), device="cpu")
    real_open = os.open

    def open_then_interrupt(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if str(path).endswith(".tmp"):
            os.close(fd)  # (the test's own descriptor; a real signal leaves it to exit)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        r.save(tmp_path / "ranks.csv")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # handlers given back


def test_a_write_takes_only_default_signal_actions_and_gives_them_back(tmp_path):
    """SIGTERM at its default is handled for the time of the write; a SIGHUP that nohup
    ignores stays ignored; both are as before afterwards."""
    from webrank.files.atomic import atomic_write

    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with atomic_write(tmp_path / "x.bin") as f:
            f.write(b"x")
            during = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
        assert callable(during[0]) and during[1] == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old_hup)


# a save whose text formatting stalls after the first slice: the parent sends the signal
# once the temporary file exists and holds data
SLOW_SAVE = """
import sys, time
import webrank
from webrank.io import columns

real = columns._formatted
def slow(table, sep):
    yield from real(table, sep)
    print("writing", flush=True)
    time.sleep(120)
columns._formatted = slow
"""
API = SLOW_SAVE + """
g = webrank.Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 3])
webrank.pagerank(g, device="cpu").save(sys.argv[1])
"""
CLI = SLOW_SAVE + """
from webrank.cli import main
main(["rank", sys.argv[2], "-o", sys.argv[1], "--device", "cpu", "--method", "power"])
"""


def signalled(script: str, signum: int, *args: Path) -> tuple[int, str]:
    """Run ``script`` in a fresh interpreter, send ``signum`` once it prints "writing";
    return its exit status (negative: killed by that signal) and its stderr."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # the child starts with the signal at its default action, as a process started from
    # a shell does: a test run under nohup (SIGHUP ignored, and inherited) would
    # otherwise test webrank's respect of that choice instead
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script),
                             *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=180)
        line = proc.stdout.readline() if ready else ""
        assert line.strip() == "writing", (line, proc.poll())
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_api_write_stopped_by_a_signal_leaves_no_temporary_file(tmp_path, signum):
    """The process still ends by the signal (as without webrank), the file half-written
    under a temporary name removed first."""
    out = tmp_path / "out.csv"
    code, err = signalled(API, signum, out)
    assert code == -signum, err[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_cli_write_stopped_by_a_signal_exits_128_plus_it(tmp_path, signum, status):
    g = tmp_path / "in.txt"
    g.write_text(CYCLE)
    out = tmp_path / "out.csv"
    code, err = signalled(CLI, signum, out, g)
    assert code == status, err[-2000:]
    one_line(err, signal.Signals(signum).name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
