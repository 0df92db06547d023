"""Partitioned inputs and outputs: every rank reads its share, no rank holds the graph.

Inputs (:func:`read_part`):

* a **shard directory** written by :func:`write_shards` (``webrank convert GRAPH DIR
  --shards P``): ``webrank-shards.json`` (nodes, links, the row bounds) and one
  ``part-IIIII-of-PPPPP.npz`` per part holding that part's CSR rows (global source ids) and
  the out-weights of its rows. Rank i reads part i and checks it against the manifest.
* **edge files** (a list of edge lists, plain or gzip, or a directory of Parquet files):
  rank r reads the files ``r, r + P, ...``; the ranks agree on row bounds balanced by
  in-links from a 65,536-bucket histogram (one all-reduce), route each edge to the rank
  that owns its target (one all-to-all), build their rows' CSR, and route each source's
  out-degree (or out-weight) to its owner (another all-to-all). Integer node ids: the
  node set is the single process's for the same files (the ids that occur, by default).
  String labels (``labels="string"``, URLs): the ranks number them together
  (:mod:`webrank.distributed.labels`, a distributed dictionary: each rank holds its
  share of the labels), in label order.

Outputs: :func:`write_scores` writes each rank's rows to ``part-RRRRR.parquet`` in a
directory (atomically, as the single-node writer) and rank 0 a ``_SUCCESS`` manifest.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from webrank.distributed.comm import Comm
from webrank.distributed.partition import Part, edge_balanced_bounds, histogram_bounds
from webrank.errors import DistributedError, GraphFormatError
from webrank.files.atomic import atomic_write, check_target, register_input
from webrank.graph import Graph
from webrank.io.options import ReadOptions

__all__ = ["MANIFEST", "read_edge_files", "read_part", "read_shard", "shard_directory",
           "write_manifest", "write_scores", "write_shard", "write_shards"]

MANIFEST = "webrank-shards.json"
#: buckets of the in-link histogram the ranks split the rows by
HISTOGRAM_BUCKETS = 1 << 16
#: bits of an edge's line within its file in its place key (file index above them)
FILE_PLACE_BITS = 40


def shard_name(part: int, parts: int) -> str:
    return f"part-{part:05d}-of-{parts:05d}.npz"


def shard_directory(directory: str | os.PathLike[str]) -> Path:
    """``directory`` made ready for a new shard set: created, and an earlier set's
    manifest removed before any shard is replaced, so that a run stopped half-way
    (an error, SIGTERM) never leaves old and new shards under a manifest; the new
    manifest is written last (:func:`write_manifest`)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    return directory


def write_shards(graph: Graph, directory: str | os.PathLike[str], parts: int) -> Path:
    """Write ``graph`` as ``parts`` row shards balanced by in-links (atomically).

    Returns the directory. Labels other than ``0..n-1`` are written beside the shards
    (``labels.npy``, or ``labels.parquet`` for strings) for the ranks' outputs.
    """
    from webrank.distributed.partition import split_graph

    if isinstance(parts, bool) or int(parts) < 1:
        raise ValueError(f"shards must be a positive integer, not {parts!r}")
    g = graph.to_host()
    directory = shard_directory(directory)
    bounds = edge_balanced_bounds(g.indptr, int(parts))
    files = []
    for part in split_graph(g, bounds=bounds):
        arrays = {"indptr": np.asarray(part.indptr, dtype=np.int64),
                  "indices": part.indices, "out_weight": part.out_weight}
        if part.weights is not None:
            arrays["weights"] = part.weights
        files.append(write_shard(directory, part.index, int(parts), part.row_begin,
                                 part.row_end, g.n, arrays))
    labels = None
    if g.labels is not None:
        labels = _write_labels(g.labels, directory)
    write_manifest(directory, n=g.n, edges=g.num_edges, bounds=bounds, files=files,
                   weighted=g.weights is not None, labels=labels, name=g.name)
    return directory


def write_shard(directory: Path, part: int, parts: int, row_begin: int, row_end: int,
                n: int, arrays: dict[str, Any]) -> str:
    """Write shard ``part`` of ``parts`` (rows ``row_begin:row_end`` of an ``n``-node
    graph) into ``directory`` atomically; returns its file name. ``arrays``: "indptr"
    (int64, from 0), "indices", "out_weight" and optionally "weights", each an array or
    a list of arrays written one after the other (a part built in pieces is never
    joined in memory)."""
    def pieces(value: Any) -> list[np.ndarray]:
        return [np.ascontiguousarray(a) for a in (value if isinstance(value, list)
                                                  else [value])]

    members = {k: pieces(v) for k, v in arrays.items()}
    edges = sum(a.size for a in members["indices"])
    meta = {"part": int(part), "parts": int(parts), "row_begin": int(row_begin),
            "row_end": int(row_end), "n": int(n), "edges": int(edges)}
    members["meta"] = [np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)]
    name = shard_name(part, parts)
    with atomic_write(directory / name) as f:
        _write_npz(f, members)
    return name


def _write_npz(f: Any, members: dict[str, list[np.ndarray]]) -> None:
    """An uncompressed ``.npz`` (what ``np.savez`` writes, ``np.load`` reads) whose
    members are each the concatenation of a list of 1-D arrays, streamed into the
    archive piece by piece."""
    import zipfile

    from numpy.lib import format as npy

    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED,
                         allowZip64=True) as archive:
        for key, arrays in members.items():
            dtype = arrays[0].dtype if arrays else np.dtype(np.float64)
            header = {"descr": npy.dtype_to_descr(dtype), "fortran_order": False,
                      "shape": (sum(a.size for a in arrays),)}
            with archive.open(f"{key}.npy", mode="w", force_zip64=True) as out:
                npy.write_array_header_2_0(out, header)
                for a in arrays:
                    if a.dtype != dtype or a.ndim != 1:
                        raise ValueError(f"pieces of {key!r} differ in dtype or shape")
                    out.write(memoryview(a).cast("B"))


def write_manifest(directory: Path, *, n: int, edges: int, bounds: np.ndarray,
                   files: list[str], weighted: bool, labels: str | None = None,
                   name: str | None = None) -> None:
    """The shard directory's ``webrank-shards.json`` (atomically): the last file
    written, so that a directory holds a manifest only once its shards are complete."""
    manifest = {"format": "webrank-shards", "version": 1, "n": int(n), "edges": int(edges),
                "parts": len(files), "bounds": [int(b) for b in bounds],
                "weighted": bool(weighted), "files": files, "labels": labels, "name": name}
    with atomic_write(directory / MANIFEST, mode="w") as f:
        json.dump(manifest, f, indent=1)


def _write_labels(labels: np.ndarray, directory: Path) -> str:
    if labels.dtype.kind in "iu":
        with atomic_write(directory / "labels.npy") as f:
            np.save(f, labels)
        return "labels.npy"
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_write(directory / "labels.parquet") as f:
        pq.write_table(pa.table({"label": labels.astype(str)}), f)
    return "labels.parquet"


def read_labels(directory: str | os.PathLike[str]) -> np.ndarray | None:
    """The labels written beside the shards, or None (ids are the labels)."""
    directory = Path(directory)
    manifest = _manifest(directory)
    name = manifest.get("labels")
    if not name:
        return None
    register_input(directory / name)
    if name.endswith(".npy"):
        return np.load(directory / name, allow_pickle=False)
    import pyarrow.parquet as pq

    return pq.read_table(directory / name)["label"].to_numpy(zero_copy_only=False)


def _manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise DistributedError(f"{directory} holds no {MANIFEST}: write shards with "
                               f"`webrank convert GRAPH {directory} --shards P`")
    register_input(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DistributedError(f"{path}: not a webrank shard manifest ({exc})") from None
    if doc.get("format") != "webrank-shards":
        raise DistributedError(f"{path}: not a webrank shard manifest")
    return doc


def read_shard(directory: str | os.PathLike[str], part: int, parts: int) -> Part:
    """Part ``part`` of a shard directory, checked against its manifest.

    Raises
    ------
    DistributedError
        No manifest, a different number of shards than ``parts`` (the ranks started),
        a missing shard, or a shard whose rows, nodes or links disagree with the manifest
        (shards of different conversions mixed).
    """
    directory = Path(directory)
    doc = _manifest(directory)
    if int(doc["parts"]) != int(parts):
        raise DistributedError(f"{directory} holds {doc['parts']} shards but {parts} ranks "
                               f"were started: start {doc['parts']} (or convert with "
                               f"--shards {parts})")
    name = shard_name(part, parts)
    path = directory / name
    if not path.exists():
        raise DistributedError(f"shard {name} is missing from {directory}")
    bounds = np.asarray(doc["bounds"], dtype=np.int64)
    register_input(path)
    try:
        data = _shard_arrays(path)
        meta = json.loads(bytes(data["meta"]).decode())
        indptr, indices = data["indptr"], data["indices"]
        out_weight = data["out_weight"]
        weights = data.get("weights")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise DistributedError(f"{path}: not a webrank shard ({exc})") from None
    r0, r1 = int(bounds[part]), int(bounds[part + 1])
    problems = []
    if (meta.get("row_begin"), meta.get("row_end")) != (r0, r1):
        problems.append(f"rows {meta.get('row_begin')}:{meta.get('row_end')} where the "
                        f"manifest says {r0}:{r1}")
    if meta.get("n") != doc["n"]:
        problems.append(f"{meta.get('n')} nodes where the manifest says {doc['n']}")
    if indptr.size != r1 - r0 + 1 or int(indptr[-1]) != indices.size or \
            meta.get("edges") != indices.size or out_weight.size != r1 - r0:
        problems.append("arrays of the wrong sizes")
    if indices.size and not _ids_within(indices, int(doc["n"])):
        problems.append("source ids outside the graph")
    if problems:
        raise DistributedError(f"shard {name} in {directory}: {'; '.join(problems)} "
                               "(shards from different conversions mixed?)")
    return Part(index=part, row_begin=r0, row_end=r1, n=int(doc["n"]), indptr=indptr,
                indices=indices, weights=weights, out_weight=out_weight)


def _shard_arrays(path: Path) -> dict[str, np.ndarray]:
    """A shard's members as read-only memory maps of the file (an uncompressed ``.npz``,
    as webrank writes them): a rank's part costs page cache, not memory of its own,
    and goes to its GPU through the staging copies straight from the map; other
    ``.npz`` files are read whole by ``np.load``."""
    from webrank.io.native import stored_arrays

    with zipfile.ZipFile(path) as archive:
        data = stored_arrays(str(path), archive, mapped=True)
    if data is None:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    return data


def _ids_within(ids: np.ndarray, n: int) -> bool:
    """Whether every id is in ``0..n-1``: a scan on all threads (a shard of billions of
    links in seconds, where NumPy's min and max each take one core)."""
    from webrank.kernels.cpu_build import id_bounds

    if ids.dtype.kind != "i" or ids.dtype.itemsize not in (4, 8):
        return bool(int(ids.min()) >= 0 and int(ids.max()) < n)
    chunk = 1 << 22
    starts = np.arange(0, ids.size, chunk, dtype=np.int64)
    counts = np.minimum(chunk, ids.size - starts)
    lo, hi = id_bounds(ids, ids, starts, counts)
    return bool(lo.min() >= 0 and hi.max() < n)


def read_part(source: Any, comm: Comm, *, num_nodes: int | None = None,
              duplicates: str | None = None, options: ReadOptions | None = None
              ) -> tuple[Part, np.ndarray, np.ndarray | None]:
    """This rank's part of ``source`` (a shard directory, a Parquet directory, or a list of
    edge files, read as :func:`read_edge_files` says), the row bounds of every part, and
    the node labels (None where the nodes are ``0..n-1``)."""
    if isinstance(source, str | os.PathLike) and (Path(source) / MANIFEST).exists():
        directory = Path(source)
        part = read_shard(directory, comm.rank, comm.size)
        bounds = np.asarray(_manifest(directory)["bounds"], dtype=np.int64)
        return part, bounds, read_labels(directory)
    return read_edge_files(source, comm, num_nodes=num_nodes, duplicates=duplicates,
                           options=options)


def _edge_files(source: Any) -> list[Path]:
    if isinstance(source, str | os.PathLike):
        p = Path(source)
        if p.is_dir():
            files = sorted(q for q in p.iterdir() if q.suffix in (".parquet", ".pq")
                           or q.name.endswith((".txt", ".txt.gz", ".tsv", ".tsv.gz",
                                               ".csv", ".csv.gz", ".el", ".el.gz")))
            if not files:
                raise DistributedError(f"{p} holds no edge files (.parquet, .txt, .csv, "
                                       "... or a shard manifest)")
            return files
        return [p]
    return [Path(s) for s in source]


def _read_columns(path: Path, options: ReadOptions) -> tuple[Any, ...]:
    """``(src, dst, weights or None)`` of one edge file; with string labels
    ``(codes, codes, weights or None, the file's labels)``. A Parquet file's columns
    are ``options.columns``, its weights used as :func:`webrank.load` uses them (where
    the weight column is present, unless ``options.weighted`` is False)."""
    if not path.exists():
        raise GraphFormatError("no such file", path=path)
    text = options.labels == "string"
    if path.suffix in (".parquet", ".pq"):
        from webrank.io.parquet import edge_table_file
        from webrank.tables import arrow_id_columns, edge_columns

        register_input(path)
        pf, source_col, target_col, weight_col = edge_table_file(path, options, str(path))
        table = pf.read(columns=[source_col, target_col]
                        + ([weight_col] if weight_col else []))
        if text:
            return edge_columns(_as_text(table, (source_col, target_col)), source_col,
                                target_col, weight_col, labels="string", name=str(path))
        return arrow_id_columns(table, source_col, target_col, weight_col, name=str(path))
    from webrank.build import joined
    from webrank.io.edgelist import read_edge_columns

    src, dst, w, labels = read_edge_columns(path, options=options)  # a third column: weights
    # int64 ids for the routing's arithmetic (the parallel parse may give int32)
    cols = (np.asarray(joined(src), np.int64), np.asarray(joined(dst), np.int64), joined(w))
    return (*cols, np.asarray(labels, dtype=object)) if text else cols


def _as_text(table: Any, names: tuple[str, str]) -> Any:
    """``table`` with its id columns ``names`` as strings: ``--labels string`` labels
    are text, so an integer column's ids are their decimal strings (the same node as the
    token "12" of a text file beside it; the ranks' dictionary numbers strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in names:
        i = table.schema.get_field_index(name)
        column = table.column(i)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            table = table.set_column(i, name, pc.cast(column, pa.string()))
    return table


def read_edge_files(source: Any, comm: Comm, *, num_nodes: int | None = None,
                    duplicates: str | None = None, options: ReadOptions | None = None
                    ) -> tuple[Part, np.ndarray, np.ndarray | None]:
    """This rank's rows of the graph in a list of edge files (see the module docstring).

    The files are read as :func:`webrank.load` reads them (``options``: header,
    delimiter, a Parquet file's columns, weights), and the node set is the single
    process's: with
    ``options.node_ids`` "appear" (the default) the ids that occur in any file, numbered
    in increasing id order; "range" (or ``num_nodes``) ``0..max id``. Parallel edges:
    ``"collapse"`` keeps one, with the weight of its last occurrence in the files taken
    in order (as :func:`webrank.load` keeps the last of one file), ``"sum"`` adds their
    weights (default: ``options.duplicates``). Returns ``(part, bounds, labels)``:
    labels is the id of each node, or None where the nodes are ``0..n-1``.
    """
    options = ReadOptions.of(options)
    text = options.labels == "string"
    if text and num_nodes is not None:
        raise ValueError("num_nodes numbers integer ids; string labels are numbered by the "
                         "ranks together")
    if not options.directed:
        raise ValueError("partitioned runs read directed edges only: write the undirected "
                         "graph's shards first (`webrank convert GRAPH --undirected DIR "
                         "--shards P`)")
    duplicates = options.duplicates if duplicates is None else duplicates
    if duplicates not in ("collapse", "sum"):
        raise ValueError(f"duplicates must be 'collapse' or 'sum', not {duplicates!r}")
    files = _edge_files(source)
    mine = files[comm.rank::comm.size]
    cols = [_read_columns(f, options) for f in mine]
    # each edge's place in the files taken in order (file index, then line): "collapse"
    # keeps the weight of the last occurrence wherever the copies were read
    places = [(np.int64(i) << np.int64(FILE_PLACE_BITS)) + np.arange(c[0].size, dtype=np.int64)
              for i, c in zip(range(comm.rank, len(files), comm.size), cols, strict=True)]
    weighted = any(comm.allgather_obj(any(c[2] is not None for c in cols)))
    if text:  # each file's codes into its own labels -> ids all ranks agree on
        cols, labels = _numbered(cols, comm)
    src = np.concatenate([c[0] for c in cols]) if cols else np.zeros(0, np.int64)
    dst = np.concatenate([c[1] for c in cols]) if cols else np.zeros(0, np.int64)
    w = place = None
    if weighted:
        w = np.concatenate([c[2] if c[2] is not None else np.ones(c[0].size) for c in cols]
                           ) if cols else np.zeros(0)
        place = np.concatenate(places) if cols else np.zeros(0, np.int64)
    top = max(int(src.max(initial=-1)), int(dst.max(initial=-1)))
    top_all = max(comm.allgather_obj(top))
    if top_all < 0:
        raise GraphFormatError("no edges in " + ", ".join(map(str, files)))
    if text:
        n = labels.size  # every label numbered occurs in a link
    elif num_nodes is None and options.node_ids == "appear":
        src, dst, labels = _appearing_ids(src, dst, top_all, comm)
        n = int(top_all + 1 if labels is None else labels.size)
    else:
        labels = None
        n = top_all + 1 if num_nodes is None else int(num_nodes)
    if top_all >= n and labels is None:
        raise GraphFormatError(f"node id {top_all} is out of range for num_nodes={n}")
    # rows balanced by in-links: a histogram of the targets, summed over the ranks
    buckets = min(n, HISTOGRAM_BUCKETS)
    hist = np.bincount((dst * buckets) // n, minlength=buckets).astype(np.float64)
    comm.allreduce_host(hist, "sum")
    bounds = histogram_bounds(hist, n, comm.size)
    # every edge to the rank that owns its target
    owner = np.searchsorted(bounds, dst, side="right") - 1
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=comm.size)
    pairs = comm.alltoallv(np.stack([src[order], dst[order]], axis=1), counts)
    wts = comm.alltoallv(w[order], counts) if weighted else None
    wplace = comm.alltoallv(place[order], counts) if weighted else None
    r0, r1 = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
    part = _local_csr(pairs[:, 0], pairs[:, 1] - r0, wts, r0, r1, n, duplicates, comm.rank,
                      wplace)
    part.out_weight = _route_out_weights(part, bounds, comm)
    return part, bounds, labels


def _numbered(cols: list[tuple], comm: Comm) -> tuple[list[tuple], Any]:
    """String-labelled columns (codes into each file's labels) with global ids instead,
    and the run's :class:`~webrank.distributed.labels.DistributedLabels`."""
    from webrank.distributed.labels import number_labels

    file_labels = [c[3] for c in cols]
    pooled = (np.concatenate(file_labels) if file_labels
              else np.zeros(0, dtype=object))
    ids, labels = number_labels(comm, pooled)
    out, at = [], 0
    for (src, dst, w, _), names in zip(cols, file_labels, strict=True):
        mine = ids[at:at + names.size]
        at += names.size
        out.append((mine[src], mine[dst], w))
    return out, labels


def _appearing_ids(src: np.ndarray, dst: np.ndarray, top: int, comm: Comm
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The node set of ``node_ids="appear"`` over every rank's edges: the ids that occur
    anywhere, numbered in increasing id order (a presence vector summed over the ranks
    where ids are dense, else the union of every rank's distinct ids). Returns the
    renumbered columns and the ids (None where every id of ``0..top`` occurs)."""
    links = int(comm.sum_host(src.size))
    if top <= 4 * links + 1024:  # dense ids: as webrank.graph numbers them
        present = np.zeros(top + 1)
        present[src] = 1.0
        present[dst] = 1.0
        comm.allreduce_host(present, "max")
        ids = np.flatnonzero(present)
    else:  # sparse ids (hashes): every rank's distinct ids, joined
        mine = np.unique(np.concatenate([src, dst]))
        ids = np.unique(np.concatenate(comm.allgather_obj(mine)))
    if ids.size == top + 1:
        return src, dst, None
    return np.searchsorted(ids, src), np.searchsorted(ids, dst), ids


def _local_csr(src: np.ndarray, row: np.ndarray, w: np.ndarray | None, r0: int, r1: int,
               n: int, duplicates: str, index: int, place: np.ndarray | None = None) -> Part:
    """The CSR of rows ``r0:r1`` from in-links (``row`` relative to r0), duplicates merged
    (``collapse`` keeps the weight of the largest ``place``: the last occurrence)."""
    rows = r1 - r0
    key = row.astype(np.int64) * n + src
    order = (np.lexsort((place, key)) if place is not None
             else np.argsort(key, kind="stable"))
    key = key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    weights = None
    if w is not None:
        w = w[order]
        starts = np.flatnonzero(first)
        last = np.append(starts[1:], key.size) - 1
        weights = (np.add.reduceat(w, starts) if duplicates == "sum"
                   else w[last]) if key.size else w
    elif duplicates == "sum" and key.size and not first.all():
        starts = np.flatnonzero(first)
        weights = np.diff(np.append(starts, key.size)).astype(np.float64)
    key = key[first]
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n, minlength=rows), out=indptr[1:])
    idx_dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    return Part(index=index, row_begin=r0, row_end=r1, n=n, indptr=indptr,
                indices=(key % n).astype(idx_dtype), weights=weights,
                out_weight=np.zeros(rows))


def _route_out_weights(part: Part, bounds: np.ndarray, comm: Comm) -> np.ndarray:
    """Out-degree (or out-weight) of this rank's rows: every rank counts the sources of
    its in-links and sends each count to the source's owner."""
    ids, inverse = np.unique(part.indices, return_inverse=True)
    sums = np.bincount(inverse, weights=part.weights, minlength=ids.size).astype(np.float64)
    owner = np.searchsorted(bounds, ids, side="right") - 1
    counts = np.bincount(owner, minlength=comm.size)  # ids are sorted: grouped by owner
    got_ids = comm.alltoallv(ids.astype(np.int64), counts)
    got_sums = comm.alltoallv(sums, counts)
    out = np.zeros(part.rows)
    np.add.at(out, got_ids - part.row_begin, got_sums)
    return out


def write_scores(directory: str | os.PathLike[str], comm: Comm, row_begin: int,
                 scores: np.ndarray, labels: np.ndarray | None = None) -> Path:
    """Each rank writes its rows' scores to ``DIR/part-RRRRR.parquet`` (columns ``node``,
    ``score``; atomically); rank 0 writes ``DIR/_SUCCESS`` once every part is written.

    A directory of an earlier run is taken over: before any rank writes, rank 0 removes
    its ``_SUCCESS`` (so that a run that fails half-way never leaves old and new parts
    under a success marker), the parts of ranks this run does not have, and temporary
    files a killed run left."""
    from webrank.io.columns import write_columns

    directory = Path(directory)
    if comm.rank == 0:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "_SUCCESS").unlink(missing_ok=True)
        for old in directory.glob("part-*.parquet"):
            if not old.stem[5:].isdigit() or int(old.stem[5:]) >= comm.size:
                check_target(old)  # never a part this run read as its edges
                old.unlink()
        for tmp in directory.glob(".part-*.tmp"):
            tmp.unlink(missing_ok=True)
    comm.allgather_obj(None)  # no rank writes before the old marker is gone
    ids = np.arange(row_begin, row_begin + scores.size)
    nodes = ids if labels is None else labels.take(ids)  # (a collective where distributed)
    # the single-process writer's encodings (no dictionaries of unique floats)
    write_columns(directory / f"part-{comm.rank:05d}.parquet",
                  {"node": nodes, "score": scores})
    written = comm.allgather_obj(scores.size)
    if comm.rank == 0:
        with atomic_write(directory / "_SUCCESS", mode="w") as f:
            json.dump({"parts": comm.size, "rows": written}, f)
    return directory
