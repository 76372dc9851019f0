"""The page around the sections: the style sheet (whole, or scoped for a fragment) and the document.

A Content-Security-Policy forbids scripts, frames and every external load: the page is data, never code.
"""

from __future__ import annotations

from prdist.render.markup import esc

__all__ = ["SCOPED_CSS", "document"]

_CSS = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       background: #fafafa; margin: 0; }
main { max-width: 980px; margin: 0 auto; padding: 24px 28px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.subtitle { margin: 0; color: #555; font-family: ui-monospace, monospace; font-size: 13px;
            overflow-wrap: anywhere; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0 8px; }
.card { flex: 1 1 180px; border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; }
.card .value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .what { color: #555; font-size: 13px; }
.badge { font-size: 13px; font-weight: 600; padding: 2px 8px; border-radius: 10px;
         vertical-align: middle; }
.badge.ok { background: #e5f5e0; color: #226b28; }
.badge.warn { background: #fff3cd; color: #7a5200; }
.badge.neutral { background: #ececec; color: #333; }
.verdict { padding: 8px 12px; border-left: 4px solid #bbb; background: #f6f6f6; }
.verdict.ok { border-color: #41ab5d; background: #f1faee; }
.verdict.warn { border-color: #e6a100; background: #fff8e6; }
figure { margin: 8px 0 0; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption, .note { color: #444; font-size: 14px; margin: 6px 0 10px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 14px; }
table.narrow { min-width: 320px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 12px 4px 0; text-align: left;
         vertical-align: top; }
th { font-weight: 600; border-bottom: 2px solid #ccc; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td { overflow-wrap: anywhere; }
.ok { color: #226b28; }
.warn { color: #7a5200; }
.bad { color: #b00020; font-weight: 600; }
.plain { color: #222; }
code { font-size: 13px; }
footer { margin-top: 40px; color: #777; font-size: 13px; }
"""

# The page's rules that a fragment needs, scoped to it so they do not restyle the host page.
def _scoped_css(scope: str, prefixes: tuple[str, ...]) -> str:
    rules = []
    for rule in _CSS.split("}"):
        selectors, _, body = rule.partition("{")
        chosen = [sel.strip() for sel in selectors.split(",") if sel.strip().startswith(prefixes)]
        if chosen:
            rules.append(", ".join(f"{scope} {sel}" for sel in chosen) + " {" + body + "}")
    return "\n".join(rules)


SCOPED_CSS = _scoped_css(".prdist-summary", (".card", ".verdict", "figure", "figcaption", "h1", "h2"))

# Scripts, frames and every external load are forbidden: the page is data, never code.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def document(title: str, body: str) -> str:
    """The self-contained HTML document: ``body`` (trusted HTML) with the style sheet and the CSP."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
        f"{body}\n"
        '<footer>Made by prdist. Bounds are guaranteed under the stated assumptions, for the verdicts as '
        "given; bands are statistical.</footer>\n</main>\n</body>\n</html>\n"
    )
