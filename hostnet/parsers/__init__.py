"""Pure parsers: captured tool output (text) -> records. They never touch a host.

Bad input raises ParseError naming the source and, where known, the line; a parser never returns
a wrong number, zero-filled fields or an empty table where data was expected."""


class ParseError(ValueError):
    """Bad input; the message names the source and, where known, the line."""

    def __init__(self, source: str, message: str, line: int | None = None):
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source, self.line = source, line


def require_complete(text: str, source: str) -> None:
    """Refuse text cut short: these tools and /proc files end every line with a newline, so an
    unterminated last line may have lost digits of its last number (which would still parse)."""
    if not text.strip():
        raise ParseError(source, "empty")
    if not text.endswith("\n"):
        raise ParseError(source, "the last line has no newline: cut short?", text.count("\n") + 1)


def is_count(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts "²", which int() refuses."""
    return text.isascii() and text.isdigit()
