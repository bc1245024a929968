"""Shell completion: ``handoff completion bash|zsh`` prints a script made from the parser itself.

The script completes subcommands, the inbox's actions, each command's options and the choices an
option takes; anything else completes as a file name. It is made from :func:`build_parser`, so it
never drifts from the commands. zsh loads it through its ``bashcompinit`` layer.
"""

from __future__ import annotations

import argparse
import shlex

__all__ = ["cmd_completion", "completion_script"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _words(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]]]:
    """A parser's option strings, and the choices of those options that take one."""
    options: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in parser._actions:
        options += [flag for flag in action.option_strings if flag.startswith("--")]
        if action.option_strings and action.choices:
            for flag in action.option_strings:
                choices[flag] = [str(choice) for choice in action.choices]
    return options, choices


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for *shell* (``bash`` or ``zsh``) of the ``handoff`` *parser*."""
    commands = _subparsers(parser)
    lines = ['# handoff shell completion: `eval "$(handoff completion SHELL)"` in your shell\'s rc file']
    if shell == "zsh":
        lines += ["autoload -U +X bashcompinit && bashcompinit"]
    lines += [
        "_handoff() {",
        "    local cur prev cmd sub",
        '    cur="${COMP_WORDS[COMP_CWORD]}"',
        '    prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    cmd="${COMP_WORDS[1]}"',
        '    if [ "$COMP_CWORD" -eq 1 ]; then',
        f'        COMPREPLY=($(compgen -W {shlex.quote(" ".join(["--help", "--version", *commands]))} -- "$cur"))',
        "        return",
        "    fi",
        '    case "$cmd" in',
    ]
    for name, sub in sorted(commands.items()):
        options, choices = _words(sub)
        actions = _subparsers(sub)
        lines.append(f"    {name})")
        for flag, values in sorted(choices.items()):
            lines += [
                f'        if [ "$prev" = {shlex.quote(flag)} ]; then',
                f'            COMPREPLY=($(compgen -W {shlex.quote(" ".join(values))} -- "$cur")); return',
                "        fi",
            ]
        for positional in sub._actions:
            if not positional.option_strings and positional.choices and not actions:
                agents = " ".join(str(choice) for choice in positional.choices)
                lines += [
                    '        if [ "$COMP_CWORD" -eq 2 ]; then',
                    f'            COMPREPLY=($(compgen -W {shlex.quote(agents)} -- "$cur")); return',
                    "        fi",
                ]
        if actions:  # the inbox: DIR, then an action, then its options
            lines += [
                '        if [ "$COMP_CWORD" -eq 3 ]; then',
                f'            COMPREPLY=($(compgen -W {shlex.quote(" ".join(actions))} -- "$cur")); return',
                "        fi",
                '        sub="${COMP_WORDS[3]}"',
            ]
            for action_name, action_parser in sorted(actions.items()):
                action_options, _ = _words(action_parser)
                lines.append(
                    f'        if [ "$sub" = {shlex.quote(action_name)} ] && [[ "$cur" == -* ]]; then '
                    f'COMPREPLY=($(compgen -W {shlex.quote(" ".join(action_options))} -- "$cur")); return; fi'
                )
        lines += [
            '        if [[ "$cur" == -* ]]; then',
            f'            COMPREPLY=($(compgen -W {shlex.quote(" ".join(options))} -- "$cur")); return',
            "        fi",
            "        ;;",
        ]
    lines += [
        "    esac",
        '    COMPREPLY=($(compgen -f -- "$cur"))',
        "}",
        "complete -o filenames -F _handoff handoff",
    ]
    return "\n".join(lines) + "\n"


def cmd_completion(args: argparse.Namespace) -> str:
    """``handoff completion bash|zsh``: the script, for ``eval "$(handoff completion bash)"``."""
    from handoff_files.cli.main import build_parser  # noqa: PLC0415 -- the parser this module is made from

    return completion_script(build_parser(), args.shell)
