"""SRT and WebVTT renderings of transcript segments."""
from __future__ import annotations


def _stamp(seconds: float, separator: str) -> str:
    ms = max(0, round(seconds * 1000))
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{separator}{ms % 1000:03d}"


def srt(segments) -> str:
    return "\n".join(f"{i}\n{_stamp(s.start, ',')} --> {_stamp(s.end, ',')}\n{s.text}\n"
                     for i, s in enumerate(segments, 1))


def vtt(segments) -> str:
    return "WEBVTT\n\n" + "\n".join(f"{_stamp(s.start, '.')} --> {_stamp(s.end, '.')}\n{s.text}\n" for s in segments)
