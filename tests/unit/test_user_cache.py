"""The user's cache folder is found in one place, and code is read back only from a folder
nobody else can write to."""

from __future__ import annotations

from pathlib import Path

from evalrunner.launch import judge_cache_dir
from evalrunner.user_cache import is_private, user_cache_dir


def test_xdg_cache_home_is_honoured_by_every_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir("a", "b") == tmp_path / "evalrunner" / "a" / "b"
    assert judge_cache_dir() == tmp_path / "evalrunner" / "judge"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == Path.home() / ".cache" / "evalrunner"


def test_only_a_folder_others_cannot_write_to_is_private(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    assert is_private(folder) and is_private(str(folder))
    for shared in (0o770, 0o707, 0o777):
        folder.chmod(shared)
        assert not is_private(folder), oct(shared)
    folder.chmod(0o755)  # readable by others is fine: they cannot plant code
    assert is_private(folder)
    assert not is_private(tmp_path / "missing")
