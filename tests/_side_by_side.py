"""Run independent command lines at once, shared by the kill-and-resume tests (the resumed
run and the uninterrupted reference write different folders and only read the data)."""

from __future__ import annotations

import subprocess


def run_side_by_side(commands, env, timeout=300):
    """Start every command at once, wait for all; their ``CompletedProcess`` in order (text
    stdout and stderr).  A command still running after ``timeout`` seconds raises
    ``subprocess.TimeoutExpired`` once every command is killed."""
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for command in commands]
    done = []
    try:
        for command, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return done
