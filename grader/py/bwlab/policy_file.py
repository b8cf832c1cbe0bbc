"""The instructor's scoring policy: the INI file that says how many points
each exercise gives, and for what (scoring.py applies it to what bwgrade
reported). grader/instructor/policy.ini by default; grade, score, report and
handout all find it through find_policy.

Policy file (configparser INI):

    [all]                      applies to every exercise
    correctness_points = 70
    correctness_mode   = per_group        ; or all_or_nothing
    groups             = small:10, medium:15, large:20, special:15, huge:10
    performance_points = 30
    thresholds         = 90:1.0, 75:0.75, 50:0.5, 25:0.25
    performance_scale  = linear           ; or steps
    bench_row          = largest          ; which benchmark row is scored
    memcheck           = small, medium, special   ; or none

    [exercise NAME]            overrides for one exercise (any key of [all])
    performance_points = 40

    [limits]                   seconds; the command line can override them
    build_timeout    = 600
    test_timeout     = 1800
    bench_timeout    = 900
    memcheck_timeout = 300

Every value is checked when the file is read: a malformed one raises
PolicyError, whose text names the section and the key.
"""
from __future__ import annotations

import configparser
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

GROUPS = ("small", "medium", "large", "special", "huge")
MODES = ("all_or_nothing", "per_group")
BENCH_ROWS = ("largest", "smallest", "first", "last")
# What pct_copy is a percentage of. fastest_copy: the faster of cudaMemcpy and
# the kit's copy kernel, both timed in the same run (bwgrade bench's `copy`);
# memcpy: cudaMemcpy alone, the only baseline before it (`pct_memcpy`).
BASELINES = ("fastest_copy", "memcpy")
# A policy file that sets thresholds but names no baseline was written for
# cudaMemcpy: its thresholds keep the meaning they were written with.
LEGACY_BASELINE = "memcpy"
SCALES = ("linear", "steps")

DEFAULTS = {
    "correctness_points": "70",
    "correctness_mode": "per_group",
    "groups": "small:10, medium:15, large:20, special:15, huge:10",
    "performance_points": "30",
    "thresholds": "90:1.0, 75:0.75, 50:0.5, 25:0.25",
    "performance_scale": "linear",
    "bench_row": "largest",
    "baseline": "fastest_copy",
    # Measured on the H100: memcheck over these groups (922 cases of one exercise,
    # the hidden ones included) adds about 2 s per exercise; large and huge would
    # add minutes.
    "memcheck": "small, medium, special",
}
LIMIT_DEFAULTS = {"build_timeout": 600.0, "test_timeout": 1800.0, "bench_timeout": 900.0,
                  "memcheck_timeout": 300.0}



class PolicyError(ValueError):
    """The policy file is malformed; the message names the section and key."""


@dataclass(frozen=True)
class ExercisePolicy:
    exercise: str
    correctness_points: float
    correctness_mode: str
    groups: tuple[tuple[str, float], ...]          # (group, weight), in file order
    performance_points: float
    thresholds: tuple[tuple[float, float], ...]    # (pct_copy, fraction), highest first
    bench_row: str
    performance_scale: str = "linear"
    memcheck: tuple[str, ...] = ()                  # groups run under memcheck; () = off
    baseline: str = "fastest_copy"                  # BASELINES

    @property
    def max_points(self) -> float:
        return self.correctness_points + self.performance_points

    def describe(self) -> dict:
        return {
            "correctness_points": self.correctness_points,
            "correctness_mode": self.correctness_mode,
            "groups": {g: w for g, w in self.groups},
            "performance_points": self.performance_points,
            "thresholds": [[p, f] for p, f in self.thresholds],
            "performance_scale": self.performance_scale,
            "bench_row": self.bench_row,
            "baseline": self.baseline,
            "memcheck": list(self.memcheck),
        }


@dataclass
class Policy:
    source: str
    sha256: str
    base: dict[str, str]
    overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=lambda: dict(LIMIT_DEFAULTS))

    def for_exercise(self, exercise: str) -> ExercisePolicy:
        merged = dict(self.base)
        merged.update(self.overrides.get(exercise, {}))
        section = f"exercise {exercise}" if exercise in self.overrides else "all"
        return _exercise_policy(exercise, merged, section)

    def check_exercises(self, known: list[str]) -> None:
        """Every [exercise NAME] section must name an exercise of the kit."""
        for name in self.overrides:
            if name not in known:
                raise PolicyError(f"{self.source}: [exercise {name}]: no such exercise "
                                  f"(this kit has: {', '.join(known) or 'none'})")
        for name in known:
            self.for_exercise(name)   # raises on a bad value

    def describe(self, exercises: list[str]) -> dict:
        return {"source": self.source, "sha256": self.sha256,
                "exercises": {ex: self.for_exercise(ex).describe() for ex in exercises},
                "limits": dict(self.limits)}


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PolicyError(f"{where}: '{text}' is not a number") from None
    if value != value or value < 0 or value == float("inf"):
        raise PolicyError(f"{where}: '{text}' must be a finite number >= 0")
    return value


def _pairs(text: str, where: str) -> list[tuple[str, str]]:
    out = []
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        if ":" not in item:
            raise PolicyError(f"{where}: '{item}' should be KEY:VALUE")
        k, v = item.split(":", 1)
        out.append((k.strip(), v.strip()))
    return out


def _exercise_policy(exercise: str, kv: dict[str, str], section: str) -> ExercisePolicy:
    where = lambda key: f"[{section}] {key}"  # noqa: E731
    mode = kv["correctness_mode"].strip()
    if mode not in MODES:
        raise PolicyError(f"{where('correctness_mode')}: '{mode}' (use {' or '.join(MODES)})")
    groups = []
    for name, weight in _pairs(kv["groups"], where("groups")):
        if name not in GROUPS:
            raise PolicyError(f"{where('groups')}: unknown group '{name}' "
                              f"(groups: {', '.join(GROUPS)})")
        if any(name == g for g, _ in groups):
            raise PolicyError(f"{where('groups')}: group '{name}' given twice")
        groups.append((name, _number(weight, where("groups"))))
    if mode == "per_group" and not groups:
        raise PolicyError(f"{where('groups')}: per_group needs at least one group")
    thresholds = []
    for pct, frac in _pairs(kv["thresholds"], where("thresholds")):
        p = _number(pct.rstrip("%"), where("thresholds"))
        f = _number(frac, where("thresholds"))
        if f > 1:
            raise PolicyError(f"{where('thresholds')}: fraction {frac} is above 1")
        thresholds.append((p, f))
    thresholds.sort(key=lambda t: -t[0])
    if len({p for p, _ in thresholds}) != len(thresholds):
        raise PolicyError(f"{where('thresholds')}: a percentage is given twice")
    for (p_hi, f_hi), (p_lo, f_lo) in zip(thresholds, thresholds[1:]):
        if f_hi < f_lo:
            raise PolicyError(f"{where('thresholds')}: {p_hi:g}% gives less ({f_hi:g}) than "
                              f"{p_lo:g}% ({f_lo:g}); fractions may not fall as the percentage rises")
    scale = kv["performance_scale"].strip()
    if scale not in SCALES:
        raise PolicyError(f"{where('performance_scale')}: '{scale}' (use {' or '.join(SCALES)})")
    memcheck = tuple(g.strip() for g in kv["memcheck"].split(",") if g.strip())
    if memcheck in (("none",), ("off",)):
        memcheck = ()
    for g in memcheck:
        if g not in GROUPS:
            raise PolicyError(f"{where('memcheck')}: unknown group '{g}' "
                              f"(groups: {', '.join(GROUPS)}, or none)")
    if len(set(memcheck)) != len(memcheck):
        raise PolicyError(f"{where('memcheck')}: a group is given twice")
    row = kv["bench_row"].strip()
    if row not in BENCH_ROWS:
        raise PolicyError(f"{where('bench_row')}: '{row}' (use one of {', '.join(BENCH_ROWS)})")
    baseline = kv["baseline"].strip()
    if baseline not in BASELINES:
        raise PolicyError(f"{where('baseline')}: '{baseline}' (use {' or '.join(BASELINES)})")
    return ExercisePolicy(
        exercise=exercise,
        correctness_points=_number(kv["correctness_points"], where("correctness_points")),
        correctness_mode=mode,
        groups=tuple(groups),
        performance_points=_number(kv["performance_points"], where("performance_points")),
        thresholds=tuple(thresholds),
        bench_row=row,
        performance_scale=scale,
        memcheck=memcheck,
        baseline=baseline,
    )


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";", "#"),
                                       default_section="__no_default_section__")
    try:
        parser.read_string(text, source=source)
    except configparser.Error as e:
        raise PolicyError(f"{source}: {e}") from None
    base = dict(DEFAULTS)
    overrides: dict[str, dict[str, str]] = {}
    limits = dict(LIMIT_DEFAULTS)
    for section in parser.sections():
        items = dict(parser.items(section))
        if section == "all":
            target = base
        elif section.startswith("exercise "):
            name = section[len("exercise "):].strip()
            if not name:
                raise PolicyError(f"{source}: [{section}] names no exercise")
            target = overrides.setdefault(name, {})
        elif section == "limits":
            for key, value in items.items():
                if key not in LIMIT_DEFAULTS:
                    raise PolicyError(f"{source}: [limits] unknown key '{key}' "
                                      f"(keys: {', '.join(LIMIT_DEFAULTS)})")
                limits[key] = _number(value, f"{source}: [limits] {key}")
                if limits[key] <= 0:
                    raise PolicyError(f"{source}: [limits] {key} must be above 0")
            continue
        else:
            raise PolicyError(f"{source}: unknown section [{section}] "
                              "(use [all], [exercise NAME] or [limits])")
        for key, value in items.items():
            if key not in DEFAULTS:
                raise PolicyError(f"{source}: [{section}] unknown key '{key}' "
                                  f"(keys: {', '.join(DEFAULTS)})")
            target[key] = value
    # Thresholds without a baseline were written against cudaMemcpy.
    written = {key for sec in parser.sections() if sec != "limits" for key in parser.options(sec)}
    if "thresholds" in written and "baseline" not in written:
        base["baseline"] = LEGACY_BASELINE
    policy = Policy(source=source, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                    base=base, overrides=overrides, limits=limits)
    _exercise_policy("(all)", base, "all")   # validate [all] on its own
    for name in overrides:
        policy.for_exercise(name)
    return policy


def load_policy(path: Path | str) -> Policy:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyError(f"cannot read policy file {path}: {e.strerror or e}") from None
    return parse_policy(text, source=str(path))


INSTRUCTOR_POLICY = "grader/instructor/policy.ini"
HANDOUT_POLICY = "handout/policy.ini"   # the instructor's, as run.py handout packs it
# Where every command looks for the course's policy, in this order: the
# instructors' copy has the first, the student handout only the second (a
# byte-for-byte copy, so its sha256 is the one grading records). grade, score
# and report all read this list, so in either copy they find the same file.
POLICY_FILES = (INSTRUCTOR_POLICY, HANDOUT_POLICY)


def find_policy(root: Path, path: str | None, fallbacks: tuple[str, ...] = POLICY_FILES) -> Policy:
    """--policy FILE, else the first of fallbacks (relative to the kit) that
    exists, else the built-in defaults. Raises PolicyError."""
    if path:
        return load_policy(path)
    for rel in fallbacks:
        if (Path(root) / rel).is_file():
            return load_policy(Path(root) / rel)
    return default_policy()


def shown_source(policy: Policy, root: Path) -> str:
    """The policy's file relative to the kit when it lies inside it (what
    grade --show-policy and score print), else as given."""
    try:
        return Path(policy.source).resolve().relative_to(Path(root).resolve()).as_posix()
    except (ValueError, OSError):
        return policy.source


def default_policy() -> Policy:
    """The built-in defaults (the same as the shipped grader/instructor/policy.ini)."""
    return parse_policy("", source="(built-in defaults)")
