"""webrank's native graph cache: the in-link CSR arrays in an uncompressed ``.npz``.

Reading it back is a few ``memcpy``\\ s (no parsing, no CSR rebuild), a small fraction of
the time to parse the text file it came from. The archive holds:

``__webrank_format__``
    the marker ``"webrank-graph"`` (any other ``.npz`` is refused);
``__webrank_version__``
    the layout version (currently 1);
``indptr``, ``indices``, ``out_weight``, ``weights`` (if weighted)
    the :class:`~webrank.graph.Graph` arrays;
``labels`` (numeric labels) or ``labels_utf8`` + ``labels_offsets`` (string labels,
UTF-8 bytes and int64 offsets, as in Arrow's ``large_string``)
    the node labels, if any;
``name``
    the graph's name when it was saved.

Nothing is pickled. The arrays of a stored (uncompressed) archive are read straight
into place, one ``readinto`` each (outside the GIL: a GPU start-up thread runs
meanwhile), without the zip members' CRC; their consistency is checked instead
(:func:`read_native`). A compressed archive goes through ``np.load(...,
allow_pickle=False)``.
"""

from __future__ import annotations

import io
import math
import os
import zipfile
from typing import Any

import numpy as np

from webrank.arrays import array_module
from webrank.build import first_bad_weight
from webrank.errors import GraphFormatError
from webrank.files.sources import check_input
from webrank.graph import Graph
from webrank.io.options import ReadOptions, reader_options

__all__ = ["FORMAT_MARKER", "FORMAT_VERSION", "read_native", "save_graph", "stored_arrays"]

FORMAT_MARKER = "webrank-graph"
FORMAT_VERSION = 1
_MARKER_KEY = "__webrank_format__"
_VERSION_KEY = "__webrank_version__"
#: the arrays a load for the GPU puts there (the labels stay on the host)
_DEVICE_ARRAYS = frozenset({"indptr", "indices", "out_weight", "weights"})


def save_graph(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Save ``graph`` as a native cache file (an uncompressed ``.npz``).

    :func:`webrank.load` reads it back (``format="webrank"``, or a ``.npz`` suffix)
    without parsing or rebuilding anything. The file is written atomically
    (:func:`~webrank.files.atomic.atomic_write`); ``path`` is used as given (no suffix is
    added).

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        Output file, normally ending in ``.npz``.

    Raises
    ------
    ValueError
        The labels are neither numbers nor strings (they could not be stored without
        pickling).

    Examples
    --------
    >>> import os, tempfile, webrank
    >>> g = webrank.Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> path = os.path.join(tempfile.mkdtemp(), "g.npz")
    >>> webrank.save_graph(g, path)
    >>> webrank.load(path).num_edges
    3
    """
    from webrank.files.atomic import atomic_write

    arrays: dict[str, np.ndarray] = {
        _MARKER_KEY: np.array(FORMAT_MARKER),
        _VERSION_KEY: np.array(FORMAT_VERSION, dtype=np.int64),
        "indptr": graph.indptr,
        "indices": graph.indices,
        "out_weight": graph.out_weight,
        "name": np.array(graph.name or ""),
    }
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    if graph.labels is not None:
        arrays.update(_encode_labels(np.asarray(graph.labels)))
    with atomic_write(path, "wb") as f:
        np.savez(f, **arrays)


def _encode_labels(labels: np.ndarray) -> dict[str, np.ndarray]:
    if labels.dtype.kind in "iufb":
        return {"labels": labels}
    import pyarrow as pa

    try:
        if labels.dtype.kind == "S":
            arr = pa.array(labels.tolist(), type=pa.large_binary())
        else:  # "U", or objects that must all be str
            arr = pa.array(labels, type=pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise ValueError(
            f"cannot save node labels of dtype {labels.dtype} (only numbers and strings "
            "can be stored without pickling)"
        ) from None
    if arr.null_count:
        raise ValueError("cannot save node labels that are None")
    _, offsets, data = arr.buffers()
    offs = np.frombuffer(offsets, dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    blob = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    blob = blob[offs[0] : offs[-1]]
    return {
        "labels_utf8": blob,
        "labels_offsets": offs - offs[0],
        "labels_kind": np.array(labels.dtype.kind),
    }


def _decode_labels(blob: np.ndarray, offsets: np.ndarray, kind: str) -> np.ndarray:
    import pyarrow as pa

    n = offsets.size - 1
    typ = pa.large_binary() if kind == "S" else pa.large_string()
    arr = pa.Array.from_buffers(
        typ, n, [None, pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64)),
                 pa.py_buffer(np.ascontiguousarray(blob, dtype=np.uint8))]
    )
    if kind != "S":
        arr.validate(full=True)  # UTF-8 and offsets checked: a corrupt cache fails here
    else:
        arr.validate()
    out = arr.to_numpy(zero_copy_only=False)
    if kind == "U":
        return out.astype(str)
    if kind == "S":
        return out.astype(bytes)
    return out


def read_native(
    path: str | os.PathLike[str], *, options: ReadOptions | None = None, **overrides: Any
) -> Graph:
    """Read a native cache written by :func:`save_graph`.

    No parsing and no CSR rebuild: the stored arrays are checked and used as they are.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file.
    options : ReadOptions, optional
        Only ``progress`` (called before and after reading), ``name`` and ``device``
        (``"gpu"``: the arrays uploaded to the current CUDA device) apply: the cache
        holds the graph as built. The name stored in the file, that of the graph
        when it was saved, is not used.
    **overrides
        The options that apply, as keywords (``name="web"``); they win over
        ``options``.

    Returns
    -------
    Graph
        The graph as saved, but for its name.

    Raises
    ------
    GraphFormatError
        Missing or unreadable file, not an ``.npz``, an ``.npz`` without the webrank
        marker, a newer format version, or inconsistent arrays.
    """
    opts = reader_options("read_native", options, overrides, ("progress", "name", "device"))
    path = check_input(path)
    opts = opts.named(path)
    name, progress = opts.name, opts.progress
    total = os.path.getsize(path)
    if progress is not None:
        progress(0, total)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":  # every .npz is a zip archive
        raise GraphFormatError(
            "not a webrank graph cache: not an .npz (zip) file"
            + (" (it is empty)" if not magic else f" (it starts with {magic!r})"),
            path=name,
        )
    try:
        with np.load(path, allow_pickle=False) as z:
            _check_claims(z.zip, name)
            keys = set(z.files)
            if _MARKER_KEY not in keys or str(z[_MARKER_KEY]) != FORMAT_MARKER:
                raise GraphFormatError(
                    "not a webrank graph cache: this .npz was not written by "
                    "webrank.save_graph (it has no webrank format marker; arrays: "
                    f"{', '.join(sorted(keys)[:8])})",
                    path=name,
                )
            version = int(z[_VERSION_KEY]) if _VERSION_KEY in keys else -1
            if version != FORMAT_VERSION:
                raise GraphFormatError(
                    f"webrank graph cache format version {version}; this webrank reads "
                    f"version {FORMAT_VERSION} (re-create the cache from the source file)",
                    path=name,
                )
            on_gpu = opts.device == "gpu"
            data = stored_arrays(path, z.zip, mapped=on_gpu) or {k: z[k] for k in keys}
    except GraphFormatError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise GraphFormatError(
            f"not a readable webrank graph cache (.npz): {type(e).__name__}: {e}", path=name
        ) from None
    if on_gpu:  # the arrays go up from the page cache; the checks run on the card
        from webrank.kernels.cuda_staging import upload  # (its pages read by all threads)

        data = {k: upload(v) if k in _DEVICE_ARRAYS else np.array(v)
                for k, v in data.items()}
    graph = _build(data, name)
    if progress is not None:
        progress(total, total)
    return graph


#: the most bytes deflate makes of one (its longest match of 258 bytes in under 2 bits)
_DEFLATE_RATIO = 1032


def _check_claims(archive: zipfile.ZipFile, name: str) -> None:
    """The shape each ``.npy`` member's header claims, checked before any array is read:
    the member's bytes must hold that many entries (a compressed member at most
    ``_DEFLATE_RATIO`` times its compressed bytes), and all of them must fit in the
    memory available.

    Raises
    ------
    GraphFormatError
        A claim the archive's bytes cannot hold (naming the array, its shape and its
        bytes).
    HostMemoryError
        The arrays need more memory than is available.
    """
    from numpy.lib import format as npy

    from webrank.memory import check_claim, check_fits

    total = 0
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            continue
        key = info.filename[:-4]
        if (info.compress_type == zipfile.ZIP_DEFLATED
                and info.file_size > _DEFLATE_RATIO * info.compress_size + 1024):
            raise GraphFormatError(
                f"array {key!r} claims {info.file_size:,} bytes, but its "
                f"{info.compress_size:,} compressed bytes inflate to at most "
                f"{_DEFLATE_RATIO * info.compress_size + 1024:,}", path=name)
        with archive.open(info) as f:
            version = npy.read_magic(f)
            read_header = (npy.read_array_header_1_0 if version == (1, 0)
                           else npy.read_array_header_2_0)
            shape, _, dtype = read_header(f)
            room = info.file_size - f.tell()
        if dtype.hasobject:
            continue  # refused by np.load (allow_pickle=False)
        count = math.prod(shape)
        check_claim(count, "entries", f"array {key!r} (shape {shape}, {dtype})", path=name,
                    item_bytes=0, min_bits=8 * dtype.itemsize, file_bytes=max(room, 0),
                    room=f"its {max(room, 0):,} bytes in the archive")
        total += count * dtype.itemsize
    check_fits(total, f"the cache's arrays ({total:,} bytes)",
               "load it on a machine with more memory", path=name)


def stored_arrays(path: str, archive: zipfile.ZipFile,
                   mapped: bool = False) -> dict[str, np.ndarray] | None:
    """Every ``.npy`` member of the ``.npz`` ``archive`` (open on ``path``) read into a
    fresh array with one ``readinto`` (``mapped``: as a read-only memory map of the
    file, nothing read yet: the pages come from the page cache as they are used, and
    count as no process's own memory), or None where a member is compressed, not
    ``.npy`` or holds objects (then ``np.load`` reads them). Shared with the readers of
    shard directories (:mod:`webrank.distributed.inputs`)."""
    from numpy.lib import format as npy

    infos = archive.infolist()
    if any(i.compress_type != zipfile.ZIP_STORED or not i.filename.endswith(".npy")
           for i in infos):
        return None
    out = {}
    with open(path, "rb", buffering=0) as f:
        for info in infos:
            f.seek(info.header_offset)
            local = f.read(30)  # the local header; its name and extra field follow
            if len(local) < 30 or local[:4] != b"PK\x03\x04":
                raise ValueError(f"bad local header of {info.filename}")
            f.seek(int.from_bytes(local[26:28], "little")
                   + int.from_bytes(local[28:30], "little"), os.SEEK_CUR)
            magic = f.read(8)  # b"\x93NUMPY", major, minor
            if len(magic) < 8 or magic[:6] != npy.MAGIC_PREFIX:
                raise ValueError(f"{info.filename} is not a .npy array")
            size_bytes = 2 if magic[6] == 1 else 4
            size = f.read(size_bytes)
            header = size + f.read(int.from_bytes(size, "little"))
            read_header = (npy.read_array_header_1_0 if magic[6] == 1
                           else npy.read_array_header_2_0)
            shape, fortran, dtype = read_header(io.BytesIO(header))
            if dtype.hasobject:
                return None
            if mapped and shape and dtype.itemsize and math.prod(shape):
                out[info.filename[:-4]] = np.memmap(
                    f, dtype=dtype, mode="r", offset=f.tell(), shape=shape,
                    order="F" if fortran else "C")
                continue
            arr = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
            view = memoryview(arr.reshape(-1, order="A")).cast("B")
            done = 0
            while done < arr.nbytes:  # a read returns at most ~2 GiB on Linux
                got = f.readinto(view[done:])
                if not got:
                    raise EOFError(f"{info.filename} is truncated")
                done += got
            out[info.filename[:-4]] = arr
    return out


def _out_weights(indices: np.ndarray, weights: Any, n: int) -> np.ndarray:
    """Each node's out-weight on the host: its links' count, or the sum of their weights,
    in link order (the order of the build's ``np.bincount``: the same floats), by
    ``np.add.at``, as fast as ``np.bincount`` without its int64 copy of the indices
    (8 bytes a link)."""
    out = np.zeros(n, np.float64)
    np.add.at(out, indices, 1.0 if weights is None else weights)
    return out


def _out_weight_faults(stored: Any, indices: Any, weights: Any
                       ) -> tuple[int | None, int | None, Any]:
    """``(first node whose weights add up beyond float64, first node whose stored
    out-weight is not its links' sum, the sums)``, None where there is none: exactly for
    link counts; for sums of weights, to the rounding that another order of the same
    additions can make (``links * 2**-52`` relative: a build on the GPU adds in another
    order than the host's). On the device by prebuilt kernels (CuPy's would compile)."""
    if array_module(indices) is not np:
        from webrank.build_gpu import out_weight_mismatch, out_weight_sums

        sums, links = out_weight_sums(indices, weights, stored.size)
        return (*out_weight_mismatch(stored, sums, links), sums)
    sums = _out_weights(indices, weights, stored.size)
    if weights is None:
        off = stored != sums
    else:
        infinite = ~np.isfinite(sums)
        if infinite.any():
            return int(np.argmax(infinite)), None, sums
        slack = (_out_weights(indices, None, stored.size) + 1.0) * 2.0**-52 * sums
        off = ~(np.abs(stored - sums) <= slack)  # (a NaN is off too)
    return None, (int(np.argmax(off)) if off.any() else None), sums


def _checked_out_weights(stored: Any, indices: Any, weights: Any, bad: Any) -> Any:
    """The stored out-weights, after checking node by node that they are what the links
    give (:func:`_out_weight_faults`). A cache whose out-weights disagree with its links
    would rank another graph than its CSR, and certify it; within the rounding both are
    the same graph's, and the stored ones keep the load's bits those of the build."""
    infinite, k, sums = _out_weight_faults(stored, indices, weights)
    if infinite is not None:
        raise bad(f"the weights of node {infinite}'s links add up beyond the float64 range "
                  "(re-create the cache from the source file)")
    if k is not None:
        what = "weights add" if weights is not None else "count comes to"
        raise bad(f"out_weight of node {k} is {float(stored[k])!r}, but its links' {what} "
                  f"{float(sums[k])!r}")
    return stored


def _csr_faults(indptr: Any, indices: Any, n: int) -> tuple[int | None, int | None]:
    """``(first row whose pointer decreases, first link whose index is outside
    0..n-1)``, None where there is none; on the device by one prebuilt kernel."""
    if array_module(indices) is not np:
        from webrank.build_gpu import check_csr

        return check_csr(indptr, indices)
    down = indptr[1:] < indptr[:-1]
    row = int(np.argmax(down)) if down.any() else None
    if not indices.size or (0 <= int(indices.min()) and int(indices.max()) < n):
        return row, None
    return row, int(np.argmax((indices < 0) | (indices >= n)))


def _build(data: dict[str, Any], name: str) -> Graph:
    """Graph from the stored arrays (NumPy, or CuPy for the CSR and weights), after
    O(n + m) consistency checks."""

    def bad(what: str) -> GraphFormatError:
        return GraphFormatError(f"corrupt webrank graph cache: {what}", path=name)

    try:
        indptr, indices, out_weight = data["indptr"], data["indices"], data["out_weight"]
    except KeyError as e:
        raise bad(f"array {e} is missing") from None
    if indptr.ndim != 1 or indptr.size < 1 or indptr.dtype.kind != "i":
        raise bad("indptr is not a 1-D integer array")
    n = indptr.size - 1
    m = int(indptr[-1])
    if (indices.ndim != 1 or indices.dtype.kind != "i" or indices.size != m
            or int(indptr[0]) != 0):
        raise bad("indptr and indices disagree")
    row, link = _csr_faults(indptr, indices, n)
    if row is not None:
        raise bad("indptr is not non-decreasing")
    if link is not None:
        raise bad(f"indices out of range: link {link} has source node "
                  f"{int(indices[link])}, outside 0..{n - 1}")
    if out_weight.shape != (n,) or out_weight.dtype.kind != "f":
        raise bad("out_weight is not a float array of one entry per node")
    weights = data.get("weights")
    if weights is not None and (weights.shape != (m,) or weights.dtype.kind != "f"):
        raise bad("weights is not a float array of one entry per link")
    if weights is not None and weights.dtype != np.float64:
        weights = weights.astype(np.float64)  # (webrank writes float64; the kernels read it)
    if weights is not None and (k := first_bad_weight(weights)) is not None:
        raise bad(f"link {k} has weight {float(weights[k])}")
    out_weight = _checked_out_weights(out_weight, indices, weights, bad)
    labels = data.get("labels")
    if "labels_utf8" in data:
        kind = str(data.get("labels_kind", "O"))
        try:
            labels = _decode_labels(data["labels_utf8"], data["labels_offsets"], kind)
        except Exception as e:
            raise bad(f"string labels: {e}") from None
    if labels is not None and labels.shape != (n,):
        raise bad("labels has the wrong length")
    return Graph(indptr=indptr, indices=indices, out_weight=out_weight, weights=weights,
                 labels=labels, name=name)
