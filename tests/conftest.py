"""Shared fixtures: small configurations that run in milliseconds."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.fixture
def run_cli():
    """Run the command line in a fresh process; returns the CompletedProcess."""

    def run(*args: str, check: bool = False) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "cachesched.cli", *args], capture_output=True, text=True,
                              timeout=600)
        if check and proc.returncode != 0:
            raise AssertionError(f"cachesched {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
