"""Command line: ``python -m s2sgrad show module:function [--wrt 0,1]``."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from s2sgrad.errors import S2SGradError
from s2sgrad.inspection import show


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Example::

        main(["show", "examples.quickstart:loss", "--wrt", "0"])
    """
    parser = argparse.ArgumentParser(prog="python -m s2sgrad")
    commands = parser.add_subparsers(dest="command", required=True)
    show_parser = commands.add_parser("show", help="print the generated gradient of a function")
    show_parser.add_argument("target", help="module:function, e.g. mypackage.model:loss")
    show_parser.add_argument("--wrt", default="0", help="argument indices or names, e.g. 0,1")
    arguments = parser.parse_args(argv)
    module_name, _, function_name = arguments.target.partition(":")
    if not function_name:
        parser.error("the target must look like module:function")
    sys.path.insert(0, "")
    try:
        function: Any = importlib.import_module(module_name)
        for part in function_name.split("."):
            function = getattr(function, part)
    except (ImportError, AttributeError) as error:
        print(f"python -m s2sgrad: cannot find {arguments.target}: {error}", file=sys.stderr)
        return 2
    wrt = tuple(int(w) if w.strip().isdigit() else w.strip() for w in arguments.wrt.split(","))
    try:
        show(function, wrt=wrt[0] if len(wrt) == 1 else wrt)
    except (S2SGradError, ValueError, TypeError) as error:
        print(f"python -m s2sgrad: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
