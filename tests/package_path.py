"""Where the ``webrank`` under test lives, for tests that start Python processes of their
own: the installed package's folder (CI installs it, with its compiled kernels), or
``src/`` of a checkout whose build put them there (``tools/build_native.py``)."""

from pathlib import Path

import webrank

#: the folder to put on a child process's PYTHONPATH so that it imports this webrank
WEBRANK_PATH = str(Path(webrank.__file__).resolve().parents[1])
