"""The verdict of a check or an audit: pass/fail, the findings (most important first), and how to rerun the judge."""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple


class Finding(NamedTuple):
    """One finding of the judge: its bug class (e.g. "base_wrong"), its sentence, its confidence (0..1), and the
    call form it was found in ("prefill", "decode", "both"; "" for a plain dump)."""

    bug_class: str
    sentence: str
    confidence: float
    form: str = ""

    def __str__(self) -> str:
        # The judge's sentence already names the call form it was found in ("prefill calls (...): ..." or
        # "... (both forms)").
        return f"[{self.bug_class}] {self.sentence}"


class Verdict:
    """What the judge said. `bool(v)` is `v.passed`; `str(v)` is a readable summary, first finding first and the
    command rerunning the judge last.

    Attributes: passed, exit_code, findings (on a pass these are warnings), warnings, first_class (None on a pass),
    notes, dump (the judged file), rerun (a shell command), json (the CLI's parsed JSON), text (the CLI's human
    summary), seconds ({"probe", "calls", "judge"}; a plain audit has only "judge"), and what was judged: kernel,
    dtype, forms, tokens (None for a plain audit; the queries of check_attention()), qk_heads ((query heads, key
    heads) of check_qk(), else None), attention ((query heads, key heads, value_dim) of check_attention(), else
    None).
    """

    def __init__(self, data: Dict[str, Any], *, text: str = "", dump: Optional[str] = None, rerun: str = "",
                 seconds: Optional[Dict[str, float]] = None, kernel: Optional[str] = None,
                 dtype: Optional[str] = None, forms: Optional[List[str]] = None, tokens: Optional[int] = None,
                 qk_heads: Optional[Tuple[int, int]] = None, attention: Optional[Tuple[int, int, int]] = None):
        """Build from the CLI's --json object (assumes its keys "pass", "exit_code", "findings", "notes")."""
        self.json: Dict[str, Any] = data
        self.passed: bool = bool(data.get("pass", False))
        self.exit_code: int = int(data.get("exit_code", 0 if self.passed else 1))
        self.findings: List[Finding] = [
            Finding(str(f.get("bug_class", "")), str(f.get("sentence", "")), float(f.get("confidence", 0.0)),
                    str(f.get("form", ""))) for f in data.get("findings", [])]
        self.notes: List[str] = [str(n) for n in data.get("notes", [])]
        self.text: str = text
        self.dump: Optional[str] = dump
        self.rerun: str = rerun or data.get("rerun") or ""  # the package's names the program as it was run
        self.seconds: Dict[str, float] = dict(seconds or {})
        self.kernel, self.dtype, self.forms, self.tokens = kernel, dtype, list(forms or []), tokens
        self.qk_heads = tuple(qk_heads) if qk_heads else None
        self.attention = tuple(attention) if attention else None

    @property
    def warnings(self) -> List[Finding]:
        """The findings of a passing verdict (e.g. angle_drift_fp32); [] when it failed."""
        return list(self.findings) if self.passed else []

    @property
    def first_class(self) -> Optional[str]:
        """The bug class of the most important finding of a failing verdict; None when it passed."""
        if self.passed:
            return None
        return self.findings[0].bug_class if self.findings else "unexplained"

    def __bool__(self) -> bool:
        return self.passed

    def _subject(self) -> str:
        if self.kernel is None:
            src = self.json.get("source") or (self.json.get("input") or {}).get("path") or self.dump or "?"
            return f"dump {src}"
        if self.attention:
            h, hk, dv = self.attention
            return (f"{self.kernel}, {self.dtype}, attention calls (queries {h} heads, keys {hk} heads, values "
                    f"{dv} wide) on {self.tokens} probe queries")
        calls = " + ".join(self.forms) if self.forms else "no"
        if self.qk_heads:
            calls += f" qk (queries {self.qk_heads[0]} heads, keys {self.qk_heads[1]} heads)"
        return f"{self.kernel}, {self.dtype}, {calls} calls on {self.tokens} probe tokens"

    def __str__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        lines = [f"ropecheck: {head} (exit {self.exit_code}) \u2014 {self._subject()}"]
        if not self.passed and not self.findings:
            lines.append("  (no finding named the failure: see the judge's text with the rerun command)")
        for f in self.findings:
            warn = self.passed and "warning" not in f.sentence.lower()
            lines.append(("  warning " if warn else "  ") + str(f))
        for n in self.notes:
            lines.append(f"  note: {n}")
        if self.seconds:
            lines.append("  seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()))
        if self.rerun:
            lines.append(f"rerun the judge: {self.rerun}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Verdict(passed={self.passed}, exit_code={self.exit_code}, first_class={self.first_class!r}, "
                f"findings={len(self.findings)}, dump={self.dump!r})")


__all__ = ["Verdict", "Finding"]
