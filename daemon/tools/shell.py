"""What makes ``tablectl`` fit a technician's hands, whatever its commands are.

* global options work after the command too (``tablectl status --json``): the
  command's parser leaves what it does not know, and the global options are
  parsed from that;
* every command's help ends with an example (one written here, else one made
  from the command's own arguments), so ``tablectl X --help`` always shows one;
* ``tablectl completion bash|zsh|tcsh`` (shtab) and ``tablectl man`` (the shipped man
  page, made from the parser itself by argparse-manpage: ``daemon/ctl/manpages.py``) are
  generated, never written by hand;
* one top-level handler: a bad input ends in one line saying what is wrong and a
  documented exit code, never in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from typing import Any

EXIT_OK, EXIT_ATTENTION, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_BUG = 0, 1, 2, 3, 4

#: written examples; a command missing here gets one made from its arguments
EXAMPLES = {
    "list": "tablectl list",
    "status": "tablectl -t bac-07 status --json",
    "devices": "tablectl -t bac-07 devices",
    "verify": "tablectl verify /var/lib/tabled/bac-07/journal.sqlite",
    "recall": "tablectl -t bac-07 recall --hand 3:41",
    "replay": "tablectl replay tests/captures/shoe-line/misdeals.log",
    "config check": "tablectl config check /etc/tabled/bac-07.toml",
    "betting": "tablectl -t bac-07 betting close",
    "void": "tablectl -t bac-07 void hand --reason 'card exposed'",
    "card": "tablectl -t bac-07 card KD",
    "alarm": "tablectl -t bac-07 alarm clear A3 --reason 'shoe replaced'",
    "device": "tablectl -t roulette-1 --role technician device wheel '*V'",
    "wheel": "tablectl -t roulette-1 wheel version",
    "trace": "tablectl -t bac-07 trace shoe --seconds 10 --save shoe.log",
    "monitor": "tablectl -t bac-07 monitor",
    "sim": "tablectl sim --driver shoe-line --link /tmp/shoe",
    "completion": "tablectl completion bash > /etc/bash_completion.d/tablectl",
    "man": "tablectl man > /usr/local/share/man/man1/tablectl.1",
}


def subcommands(p: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, Any]]:
    """(command path, its parser) for every command and sub-command."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sp in action.choices.items():
                full = f"{path} {name}".strip()
                yield full, sp
                yield from subcommands(sp, full)


def _made_example(path: str, sp: argparse.ArgumentParser) -> str:
    words = ["tablectl", "-t", "bac-07", path]
    for act in sp._actions:
        if act.option_strings or isinstance(act, argparse._SubParsersAction):
            if act.required and act.option_strings:
                words += [act.option_strings[-1], (act.metavar or act.dest).upper()]
            continue
        if act.nargs in ("?", "*"):
            continue
        if act.choices:
            words.append(str(next(iter(act.choices))))
        else:
            words.append(str(act.metavar or act.dest).upper())
    return " ".join(words)


def finish(p: argparse.ArgumentParser) -> None:
    """An example at the end of every command's help, and help on positional choices."""
    if not p.epilog:  # the top-level help (and the man page) list the written examples
        p.formatter_class = argparse.RawDescriptionHelpFormatter
        p.epilog = "examples:\n" + "\n".join(f"  {x}" for x in EXAMPLES.values())
    for path, sp in subcommands(p):
        if not sp.epilog:
            sp.epilog = "example: " + EXAMPLES.get(path, _made_example(path, sp))
        for act in sp._actions:
            if act.help is None and act.choices and not act.option_strings:
                act.help = "one of: " + ", ".join(map(str, act.choices))


def register(sub: Any, top: Callable[[], argparse.ArgumentParser]) -> None:
    c = sub.add_parser("completion", help="print a shell completion script (shtab)")
    c.add_argument("shell", choices=["bash", "zsh", "tcsh"], help="the shell to complete in")
    c.set_defaults(func=lambda a: _completion(top(), a.shell))
    m = sub.add_parser("man", help="print tablectl's man page (made from this parser by make man)")
    m.set_defaults(func=lambda a: _man())


def _completion(p: argparse.ArgumentParser, shell: str) -> int:
    import shtab

    sys.stdout.write(shtab.complete(p, shell=shell))
    return EXIT_OK


def _man() -> int:
    from daemon.ctl import shipped

    sys.stdout.write(shipped.path("man", "tablectl.1").read_text(encoding="utf-8"))
    return EXIT_OK


def parse(
    p: argparse.ArgumentParser, add_globals: Callable[..., None], argv: list[str] | None
) -> argparse.Namespace:
    """Parse with the global options allowed before and after the command."""
    a, rest = p.parse_known_args(argv)
    if rest:
        after = argparse.ArgumentParser(
            prog=p.prog, add_help=False, argument_default=argparse.SUPPRESS
        )
        add_globals(after, suppress=True)
        after.exit_on_error = True
        a, still = after.parse_known_args(rest, namespace=a)
        if still:
            p.error(f"unrecognized arguments: {' '.join(still)}")
    return a


def guarded(
    run: Callable[[], int],
    expected: tuple[type[BaseException], ...] | Callable[[], tuple[type[BaseException], ...]],
) -> int:
    """Run a command; what goes wrong ends in one line and an exit code, not a traceback.

    ``expected`` may be a function giving the user errors once one is raised, so a
    command need not import every module whose error it might have met (``daemon/ctl/cli.py``);
    a config error is one only if the config loader was imported, for the same reason.
    """
    try:
        return int(run())
    except BrokenPipeError:  # `| head`
        return EXIT_OK
    except KeyboardInterrupt:
        print("tablectl: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        config = sys.modules.get("daemon.runtime.config")
        if config is not None and isinstance(e, config.ConfigError):
            print(str(e), file=sys.stderr)
            return EXIT_UNREACHABLE if getattr(e, "unreachable", False) else EXIT_USAGE
        if isinstance(e, expected if isinstance(expected, tuple) else expected()):
            print(f"tablectl: {e}", file=sys.stderr)
            return EXIT_USAGE
        # a bug: say so, in one line, with what to report
        print(
            f"tablectl: internal error: {type(e).__name__}: {e} "
            "(a bug: please report it with the command and `tablectl --version`)",
            file=sys.stderr,
        )
        return EXIT_BUG
