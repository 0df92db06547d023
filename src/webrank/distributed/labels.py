"""Node labels that no rank holds whole: the distributed dictionary of a partitioned run.

A crawl comes as URL pairs. In a partitioned run (``mpirun -n P webrank rank links/
--labels string --distributed``) each rank reads its share of the links, so no rank sees
every URL, and none should hold them all. The ranks number the URLs together, as Spark
and GraphFrames index string ids, with a sample sort instead of a hash so that the ids
come out in label order:

1. each rank sorts its distinct labels and sends an even sample of them to all;
2. ``P - 1`` splitters cut the sorted samples into equal shares: rank ``o`` owns the
   labels between splitters ``o - 1`` and ``o``;
3. one all-to-all sends each label to its owner, which keeps the sorted distinct labels
   it received: its share of the dictionary;
4. ids are the labels' places in the global order (an owner's offset, from one
   all-gather of the shares' sizes, plus the label's place in its share), sent back to
   the ranks that asked by a second all-to-all.

Labels travel as UTF-8 bytes (one array of lengths, one of bytes) through the run's
communicator (:meth:`~webrank.distributed.comm.Comm.alltoallv`). Afterwards a rank holds
its share of the labels (:class:`DistributedLabels`) and finds the label of any id by
asking its owner (:meth:`DistributedLabels.take`, a collective).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webrank.distributed.comm import Comm

__all__ = ["DistributedLabels", "number_labels"]

#: labels each rank samples per rank of the run, for the splitters
SAMPLES_PER_RANK = 64


def _to_bytes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lengths, bytes)``: the UTF-8 encoding of each label, back to back."""
    import pyarrow as pa

    arr = pa.array(labels, type=pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset
                                                              + len(arr) + 1]
    data = arr.buffers()[2]
    raw = (np.frombuffer(data, dtype=np.uint8) if data is not None
           else np.zeros(0, dtype=np.uint8))
    return np.diff(offsets), raw[offsets[0]:offsets[-1]].copy()


def _from_bytes(lengths: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """The labels of :func:`_to_bytes`, as an object array of ``str``."""
    import pyarrow as pa

    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    arr = pa.LargeStringArray.from_buffers(lengths.size, pa.py_buffer(offsets),
                                           pa.py_buffer(np.ascontiguousarray(raw)))
    return arr.to_numpy(zero_copy_only=False).astype(object)


def _send_labels(comm: Comm, labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """All-to-all of labels grouped by destination rank (``counts[r]`` for rank r): the
    labels every rank sent here, in rank order."""
    lengths, raw = _to_bytes(labels)
    cum = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ends = np.cumsum(counts)
    byte_counts = cum[ends] - cum[ends - counts]  # each destination's bytes
    got_lengths = comm.alltoallv(lengths, counts)
    got_raw = comm.alltoallv(raw, byte_counts)
    return _from_bytes(got_lengths, got_raw)


def _sorted_distinct(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct labels in order (UTF-8 byte order: Python's order of ``str``) and the
    place of each label among them, by Arrow's hash and sort kernels (NumPy's sort of
    ``str`` objects compares them one Python call at a time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(labels, type=pa.large_string())
    distinct = pc.unique(arr)
    distinct = distinct.take(pc.array_sort_indices(distinct))
    where = pc.index_in(arr, value_set=distinct).to_numpy(zero_copy_only=False)
    return distinct.to_numpy(zero_copy_only=False).astype(object), where.astype(np.int64)


def _by_owner(owner: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The order that groups items by owner rank, and each owner's count."""
    return np.argsort(owner, kind="stable"), np.bincount(owner, minlength=size)


class DistributedLabels:
    """The labels of nodes ``0..n-1``, each rank holding its share: rank ``o`` holds the
    labels of ids ``offsets[o]:offsets[o + 1]`` (sorted, as the ids are).

    :meth:`take` is collective: every rank of the run calls it, each with its own ids.
    """

    def __init__(self, comm: Comm, share: np.ndarray, offsets: np.ndarray) -> None:
        self.comm, self.share = comm, share
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @property
    def size(self) -> int:
        """Nodes of the graph."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return self.size

    def take(self, ids: Any) -> np.ndarray:
        """The labels of ``ids`` (this rank's), asked of their owners (collective)."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            raise IndexError(f"node ids must be in 0..{self.size - 1}")
        owner = np.searchsorted(self.offsets, ids, side="right") - 1
        order, counts = _by_owner(owner, self.comm.size)
        asked = self.comm.alltoallv(ids[order], counts)
        asked_counts = self.comm.alltoallv(counts, np.ones(self.comm.size, np.int64))
        answer = self.share[asked - self.offsets[self.comm.rank]]
        got = _send_labels(self.comm, answer, asked_counts)
        out = np.empty(ids.size, dtype=object)
        out[order] = got
        return out


def number_labels(comm: Comm, labels: np.ndarray) -> tuple[np.ndarray, DistributedLabels]:
    """The global id of each of this rank's ``labels`` (``str``; repeats allowed),
    numbered with every rank's in label order, and the dictionary the ranks now share
    (see the module docstring). Collective."""
    mine, where = _sorted_distinct(labels)
    size = comm.size
    if mine.size:
        pick = np.linspace(0, mine.size - 1, min(mine.size, SAMPLES_PER_RANK * size))
        sample = mine[np.unique(pick.astype(np.int64))]
    else:
        sample = mine
    pooled = np.sort(np.concatenate([np.asarray(s, dtype=object)
                                     for s in comm.allgather_obj(sample)]))
    cut = (np.arange(1, size) * pooled.size) // size
    splitters = pooled[cut] if pooled.size else np.zeros(0, dtype=object)
    owner = np.searchsorted(splitters, mine, side="right") if size > 1 else np.zeros(
        mine.size, np.int64)
    order, counts = _by_owner(owner, size)
    received = _send_labels(comm, mine[order], counts)
    received_counts = comm.alltoallv(counts, np.ones(size, np.int64))
    share, place = _sorted_distinct(received)
    sizes = np.asarray(comm.allgather_obj(int(share.size)), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    answer = offsets[comm.rank] + place
    got = comm.alltoallv(answer.astype(np.int64), received_counts)
    ids = np.empty(mine.size, dtype=np.int64)
    ids[order] = got
    return ids[where], DistributedLabels(comm, share, offsets)
