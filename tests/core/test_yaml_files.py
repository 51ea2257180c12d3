"""Config files are bounded and strict: a small file cannot expand into a huge structure through
aliases ("billion laughs"), a key written twice is an error naming key, line and file, and every
reader of YAML in crsim goes through `crsim.core.yaml_files`."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crsim.cli._support import parse_args
from crsim.core.errors import ConfigError, CrsimError, DataError
from crsim.core.yaml_files import MAX_DEPTH, MAX_NODES, load_yaml
from crsim.eval.judge.rubric import load_rubric
from crsim.eval.run_scoring import load_judge_config
from crsim.llm.config import load_llm_settings
from crsim.runner.config import load_config
from crsim.sim.recusersim.profile import load_dictionary
from crsim.sim.shared.nlg import load_templates
from crsim.studies.gcdf1.config import load_config as load_gcdf1_config
from crsim.studies.pairwise import load_criteria

CONFIGS = Path(__file__).parents[2] / "configs"


def laughs(levels: int, indent: str = "") -> str:
    """A "billion laughs": each anchor is a list of nine aliases of the previous one (9**levels values)."""
    lines = [f'{indent}a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    names = "abcdefghijklmnop"
    for previous, name in itertools.pairwise(names[: levels + 1]):
        lines.append(f"{indent}{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


#: `crsim ARGS` in this interpreter, writing its peak resident memory (VmHWM, KiB) to the file named by
#: argv[1]. Not `wait4`'s ru_maxrss: Linux carries a process's maximum over fork and exec, so a child of
#: a large test process reports the parent's size; VmHWM belongs to the new address space alone.
_PEAK_OF_CRSIM = """
import re, runpy, sys
peak_file = sys.argv.pop(1)
sys.argv[0] = "crsim"
try:
    runpy.run_module("crsim", run_name="__main__")
finally:
    status = open("/proc/self/status", encoding="ascii").read()
    open(peak_file, "w").write(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1))
"""


@pytest.mark.slow
def test_a_billion_laughs_config_is_refused_fast_in_one_line(tmp_path: Path) -> None:
    # 9**8 = 43 million values in LLM options (an open mapping) from under 700 bytes; before the fix
    # `crsim run` expanded a 7-level version into a 197 MB manifest.json at 1 GB of memory.
    config = tmp_path / "laughs.yaml"
    head = "users: {size: 1}\ncrss: [{name: popular}]\nmax_turns: 1\nllm:\n  default:\n"
    config.write_text(head + "    provider: scripted\n    options:\n" + laughs(7, " " * 6))
    assert config.stat().st_size < 700
    out = tmp_path / "run"
    peak = tmp_path / "peak"
    command = [sys.executable, "-c", _PEAK_OF_CRSIM, str(peak), "run", str(config), "--out", str(out)]
    with (tmp_path / "stdout").open("wb") as stdout, (tmp_path / "stderr").open("wb") as stderr:
        status = subprocess.run(command, stdout=stdout, stderr=stderr, env=dict(os.environ)).returncode
    error = (tmp_path / "stderr").read_text(encoding="utf-8").strip()
    assert status == 2, error
    assert "\n" not in error, error
    assert str(config) in error and "aliases" in error and "line 13" in error
    # Importing crsim and exiting takes ~250 MB; the expansion took 1 GB (and 27 s, but wall time on a
    # shared machine is no test: memory tells the two apart).
    assert int(peak.read_text()) < 600 * 1024
    assert not (out / "manifest.json").exists()


def test_alias_expansion_is_counted_without_building_it() -> None:
    started = time.perf_counter()
    with pytest.raises(Exception, match=rf"expands to more than {MAX_NODES} values") as info:
        load_yaml(laughs(15))  # 9**15 values: only counting by identity can answer in time
    # building 9**15 values would not end (nor fit in memory); counting takes milliseconds
    assert time.perf_counter() - started < 20 and type(info.value).__name__ == "YamlRefused"
    assert load_yaml(laughs(3))["d"][8][8][8] == ["lol"] * 9  # 9**4 values: under the limit, loaded


def test_recursive_aliases_and_deep_nesting_are_refused() -> None:
    with pytest.raises(Exception, match=r"refers to a structure that contains it \(line 2\)"):
        load_yaml("x: 1\nloop: &a [1, *a]\n")
    with pytest.raises(Exception, match=rf"nested deeper than {MAX_DEPTH} levels"):
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    chain = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, MAX_DEPTH + 1))
    with pytest.raises(Exception, match="once aliases are expanded"):
        load_yaml(chain)
    assert load_yaml("[" * 20 + "]" * 20) is not None


def test_duplicate_keys_are_an_error_naming_key_line_and_file(tmp_path: Path) -> None:
    config = tmp_path / "exp.yaml"
    config.write_text("name: a\nseed: 1\nusers:\n  size: 3\n  seed: 4\n  size: 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert str(info.value) == f"{config}: duplicate key 'size' at line 6, column 3 (first at line 4)"
    config.write_text("name: a\nseed: 1\nname: b\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'name' at line 3, column 1 \(first at line 1\)"):
        load_config(config)


def test_merge_keys_may_still_be_overridden() -> None:
    loaded = load_yaml("base: &b {k: 10, id: x}\ncrs:\n  <<: *b\n  k: 20\n")
    assert loaded["crs"] == {"k": 20, "id": "x"}


def test_json_configs_refuse_duplicate_keys_and_read_json_numbers(tmp_path: Path) -> None:
    config = tmp_path / "exp.json"
    config.write_text('{"name": "a",\n "users": {"size": 3,\n  "size": 4}}\n')
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert str(info.value).startswith(f"{config}: duplicate key 'size' at line 3")
    config.write_text('{"name": "a", "llm": {"default": {"provider": "scripted", "timeout": 1e2}}}')
    assert load_config(config).llm.default.timeout == 100.0  # YAML 1.1 would read 1e2 as a string
    config.write_text("[" * 500 + "]" * 500)
    with pytest.raises(ConfigError, match=rf"{config.name}: nested deeper than {MAX_DEPTH} levels"):
        load_config(config)


def _readers() -> dict[str, tuple[Callable[[Path], Any], type[Exception], str]]:
    """Every reader of a YAML file: what it loads, the error it raises, a valid file's first line."""
    return {
        "experiment config": (load_config, ConfigError, "name: x"),
        "judge config": (load_judge_config, ConfigError, "judges: []"),
        "llm settings": (load_llm_settings, ConfigError, "llm: {}"),
        "rubric": (load_rubric, ConfigError, "name: x"),
        "criteria": (load_criteria, ConfigError, "name: x"),
        "gcdf1 config": (load_gcdf1_config, ConfigError, "use_lowercase: true"),
        "profile dictionary": (lambda p: load_dictionary(str(p)), ConfigError, "traits: {}"),
        "nlg templates": (lambda p: load_templates(str(p)), DataError, "inform: ['{value}']"),
    }


@pytest.mark.parametrize("kind", list(_readers()))
def test_every_yaml_reader_refuses_duplicates_and_laughs(kind: str, tmp_path: Path) -> None:
    read, error, first = _readers()[kind]
    duplicated = tmp_path / "duplicated.yaml"
    duplicated.write_text(f"{first}\nextra: 1\nextra: 2\n")
    with pytest.raises(error) as info:
        read(duplicated)
    assert str(duplicated) in str(info.value) and "duplicate key 'extra' at line 3" in str(info.value)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(f"{first}\n{laughs(8)}")
    with pytest.raises(error, match=r"bomb\.yaml.*expands to more than"):
        read(bomb)


def test_cli_args_refuse_duplicates_and_laughs() -> None:
    with pytest.raises(CrsimError, match=r"--args-json: duplicate key 'k'"):
        parse_args([], '{"k": 1, "k": 2}')
    with pytest.raises(CrsimError, match=r"--arg x: duplicate key 'a'"):
        parse_args(["x={a: 1, a: 2}"])
    bomb = "{" + laughs(8).strip().replace("\n", ", ") + "}"  # the same anchors as a flow mapping
    with pytest.raises(CrsimError, match=r"--arg x: .*expands to more than"):
        parse_args([f"x={bomb}"])
    assert parse_args(["k=10", "name=[unclosed"]) == {"k": 10, "name": "[unclosed"}


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_configs_still_load(path: Path) -> None:
    if path.name.startswith("judge"):
        assert load_judge_config(path).judges
    else:
        assert load_config(path).crss


def test_no_module_reads_yaml_around_yaml_files() -> None:
    """Every YAML text is parsed by `crsim.core.yaml_files`, so the bounds and the duplicate check hold."""
    source = Path(__file__).parents[2] / "src" / "crsim"
    parse_call = re.compile(r"\byaml\.(safe_|full_|unsafe_)?(load|load_all|compose|compose_all)\(")
    offenders = [
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if path.relative_to(source).as_posix() != "core/yaml_files.py"
        and parse_call.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
