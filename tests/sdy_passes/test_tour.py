"""`layout-toolkit-tour`: help and version without running, commands that paste into a shell."""

import os
import subprocess
import sys

import pytest

from sdy_passes import _tour


def test_help_and_version_do_not_run_the_tour(capsys):
    for flag, out_start in (("--help", "usage: layout-toolkit-tour"), ("--version", "layout-toolkit-tour (")):
        with pytest.raises(SystemExit) as info:
            _tour.main([flag])
        assert info.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(out_start) and "===" not in out
    with pytest.raises(SystemExit) as info:
        _tour.main(["extra"])
    assert info.value.code == 2


def test_printed_commands_paste_into_a_shell(tmp_path):
    # `python` on PATH is this interpreter; each printed command, run by bash, prints what the
    # tour printed under it.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    tour = subprocess.run([sys.executable, "-m", "sdy_passes._tour"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert tour.returncode == 0, tour.stderr
    for title, args, stdin in _tour.STEPS:
        command = _tour.command_line(args, stdin)
        assert f"=== {title}\n$ {command}\n" in tour.stdout
        pasted = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env,
                                timeout=120)
        assert pasted.returncode == 0, pasted.stderr
        assert f"$ {command}\n{pasted.stdout}" in tour.stdout
    assert "'bf16[4,8]{1,0:T(2,4)(2,1)}'" in tour.stdout  # quoted: bare, bash would expand it
