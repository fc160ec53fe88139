"""Functions of C++/CUDA sources and their lengths, by brace matching (comments and literals stripped)."""
import re
from pathlib import Path

CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try)\b")
TYPE = re.compile(r"^\s*(template\s*<[^>]*>\s*)?(class|struct|union|enum)\b")


def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r'R"([^(]*)\((.*?)\)\1"', lambda m: '""' + "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"(?m)^\s*#.*$", "", text)


def functions(path):
    """(name, first line, last line) of every function or method body in the file, outermost only."""
    text = strip(Path(path).read_text())
    found, stack, head, head_line, line = [], [], "", None, 1
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "{":
            kind = "block"
            outer = [k for k, *_ in stack if k not in ("namespace", "extern")]
            h = head.strip()
            if h.startswith("namespace") or h == "" and not stack:
                kind = "namespace"
            elif h.startswith('extern ""'):
                kind = "extern"
            elif TYPE.match(h) and "(" not in h.split("{")[0].split("=")[0]:
                kind = "type"
            elif "(" in h and not CONTROL.match(h) and all(k == "type" for k in outer):
                kind = "function"
            stack.append((kind, head_line or line, h))
            head, head_line = "", None
        elif ch == "}":
            if stack:
                kind, first, h = stack.pop()
                if kind == "function":
                    name = re.findall(r"([~\w:]+)\s*\(", h)
                    found.append((name[0] if name else h[:40], first, line))
            head, head_line = "", None
        elif ch == ";":
            head, head_line = "", None
        else:
            if not ch.isspace() and head_line is None:
                head_line = line
            head += ch
    return found
