"""File plumbing every layer uses, below the readers and writers of :mod:`webrank.io`:

* :mod:`webrank.files.atomic`: outputs written to a temporary file and renamed into
  place, inputs registered so that no output overwrites them, signals that unwind a
  write;
* :mod:`webrank.files.sources`: an input's checks, its compression, its size;
* :mod:`webrank.files.arrow`: pyarrow buffers as NumPy arrays and back.
"""
