"""Accessibility checks with axe-core, run inside the page under test.

The axe-core script comes from the pinned axe-playwright-python package and is
injected with page.evaluate, so nothing is fetched at test time (the request
log of the page would show it).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, Page

from tests.browser.network import no_broken_requests, no_foreign_requests, request_log, watch

BLOCKING_IMPACTS = ("serious", "critical")
HTML = "text/html; charset=utf-8"
AXE_SCRIPT = Axe().axe_script

RUN_AXE = """async ([context, options]) => {
    const results = await axe.run(context ?? document, options);
    return {version: results.testEngine.version, violations: results.violations};
}"""

# The DOM as a page without JavaScript rendered it, ready to load with scripts
# on: its scripts dropped, <noscript> contents (which a no-JS parser builds as
# elements) kept as elements.
RENDERED_DOM = """() => {
    const root = document.documentElement.cloneNode(true);
    root.querySelectorAll('script').forEach((node) => node.remove());
    root.querySelectorAll('noscript').forEach((node) => node.replaceWith(...node.childNodes));
    const doctype = document.doctype ? `<!DOCTYPE ${document.doctype.name}>` : '';
    return doctype + root.outerHTML;
}"""

_no_script_contexts: weakref.WeakSet[BrowserContext] = weakref.WeakSet()


def mark_no_script(context: BrowserContext) -> None:
    """Note that a context runs without JavaScript (axe cannot run in it)."""
    _no_script_contexts.add(context)


def axe_check(
    page: Page,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    allow: dict[str, str] | None = None,
) -> list[dict]:
    """Run axe-core on the page and fail on any serious or critical violation.

    `include` and `exclude` are CSS selectors scoping the check (axe's context);
    by default the whole document is checked. `allow` maps axe rule ids to why a
    page we do not write (third-party markup) breaks them: those violations do
    not fail the check, but an allowed rule that no longer fails does, so no
    exception outlives its cause. Return every violation found, the minor and
    moderate ones included.
    """
    allow = allow or {}
    scope = {key: value for key, value in (("include", include), ("exclude", exclude)) if value}
    with _scripted(page) as target:
        target.evaluate(AXE_SCRIPT)
        results = target.evaluate(RUN_AXE, [scope or None, {"resultTypes": ["violations"]}])
    violations = results["violations"]
    blocking = [v for v in violations if v["impact"] in BLOCKING_IMPACTS and v["id"] not in allow]
    assert not blocking, report(page.url, results["version"], blocking)
    stale = sorted(set(allow) - {violation["id"] for violation in violations})
    assert not stale, f"axe rules allowed on {page.url} no longer fail there, remove them from allow: {stale}"
    return violations


def report(url: str, version: str, violations: list[dict]) -> str:
    lines = [f"axe-core {version} found {len(violations)} serious or critical violation(s) on {url}:"]
    for violation in violations:
        lines.append(f"- {violation['id']} ({violation['impact']}): {violation['help']} [{violation['helpUrl']}]")
        for node in violation["nodes"][:5]:
            lines.append(f"    at {' '.join(map(str, node['target']))}: {node['html'][:160]}")
            lines.extend(f"      {line}" for line in node.get("failureSummary", "").splitlines()[1:])
        if len(violation["nodes"]) > 5:
            lines.append(f"    ... and {len(violation['nodes']) - 5} more elements")
    return "\n".join(lines)


@contextlib.contextmanager
def _scripted(page: Page) -> Iterator[Page]:
    """Yield the page itself, or for a no-JavaScript page a scripted copy of its DOM.

    axe-core needs timers, which never fire where script execution is off, so
    it would wait forever there. The copy is served at the same URL in a new
    context with the same cookies and viewport, so styles and relative links
    resolve as they did; only the copy's scripts run.
    """
    if page.context not in _no_script_contexts:
        yield page
        return
    html = page.evaluate(RENDERED_DOM)
    url = page.url
    context = page.context.browser.new_context(viewport=page.viewport_size)
    try:
        watch(context, request_log(page).origin)
        context.add_cookies(page.context.cookies())
        context.route(lambda candidate: candidate == url, lambda route: route.fulfill(body=html, content_type=HTML))
        copy = context.new_page()
        copy.goto(url)
        yield copy
        no_foreign_requests(copy)
        no_broken_requests(copy)
    finally:
        context.close()
