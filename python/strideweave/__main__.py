"""python3 -m strideweave: the same tour as `strideweave tour` (scripts/demo)."""

from ._tour import main

raise SystemExit(main())
