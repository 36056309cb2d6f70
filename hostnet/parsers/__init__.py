"""Pure parsers: captured tool output (text) -> records. They never touch a host."""


class ParseError(ValueError):
    """Bad input; the message names the source and, where known, the line."""

    def __init__(self, source: str, message: str, line: int | None = None):
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source, self.line = source, line
