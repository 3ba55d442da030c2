#!/usr/bin/env python3
"""Type-checks every ```swift block of README.md and Docs/*.md against the built modules.

Usage: check-doc-snippets.py [BUILD_DIR]   (default .build/debug; run `swift build` first)

The guides of Docs/ are generated from the DocC articles of the modules' catalogues
(Scripts/generate-docs.py keeps their code blocks as they are), so checking the pages
checks the articles' snippets too.

Blocks that import ChaosConsole need a build with the package trait Console (CI checks
against .build-console/debug); against any other build they are listed as skipped.

Each block is checked on its own, as a main file (top-level statements allowed), with the
package's modules on the search path. Blocks fenced as ```swift are checked; write
illustrations that are not Swift (or not meant to compile) as ```text. Prints one line per
failing block and exits 1 when any fails.
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".build" / "debug"
FENCE = re.compile(r"^```swift\s*$(.*?)^```\s*$", re.M | re.S)


def blocks():
    for document in [ROOT / "README.md", *sorted((ROOT / "Docs").glob("*.md"))]:
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            yield document.relative_to(ROOT), line, match.group(1)


def check(item, folder):
    document, line, code = item
    path = pathlib.Path(folder) / f"{str(document).replace('/', '_')}_{line}.swift"
    path.write_text(code, encoding="utf-8")
    command = [
        "swiftc", "-typecheck", "-swift-version", "6",
        "-I", str(BUILD / "Modules"),
        "-Xcc", f"-I{ROOT / 'Sources' / '3-SwiftAPI' / 'CFFI'}",
    ]
    # Every C target's public headers (they include each other by name).
    for include in sorted((ROOT / "Sources").glob("*/C*/include")):
        command += ["-Xcc", f"-I{include}"]
    # The C targets' module maps, as SwiftPM hands them to its own clients. A target with a
    # module map of its own (in its include/, found above) has none here; one left by an
    # older build that names headers no longer there is skipped.
    for modulemap in BUILD.glob("*.build/module.modulemap"):
        headers = re.findall(r'header "([^"]+)"', modulemap.read_text(encoding="utf-8"))
        if all(pathlib.Path(header).exists() for header in headers):
            command += ["-Xcc", f"-fmodule-map-file={modulemap}"]
    # Dependencies' C modules with module maps of their own (swift-atomics' _AtomicsShims,
    # which ChaosConsole's Hummingbird needs), as they sit in the checkouts.
    checkouts = next((folder / "checkouts" for folder in BUILD.absolute().parents if (folder / "checkouts").is_dir()), None)
    for modulemap in checkouts.glob("*/Sources/*/include/module.modulemap") if checkouts else []:
        command += ["-Xcc", f"-fmodule-map-file={modulemap}"]
    command.append(str(path))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode == 0:
        return None
    first = next((l for l in result.stderr.splitlines() if "error:" in l), result.stderr.strip()[:300])
    return f"{document}:{line}: snippet does not compile: {first}"


def main():
    if not (BUILD / "Modules" / "ChaosKit.swiftmodule").exists():
        print(f"no built modules in {BUILD}; run `swift build --build-tests` first")
        return 2
    items = list(blocks())
    # ChaosConsole's API exists only in a build with the package trait Console: without one,
    # its snippets are counted as skipped, by name.
    with tempfile.TemporaryDirectory() as folder:
        probe = ("<trait probe>", 0, "import ChaosConsole\nlet configuration = ChaosConsole.Configuration()\n")
        console = check(probe, folder) is None
    skipped = [] if console else [item for item in items if re.search(r"^import ChaosConsole$", item[2], re.M)]
    items = [item for item in items if item not in skipped]
    with tempfile.TemporaryDirectory() as folder:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            failures = [f for f in pool.map(lambda item: check(item, folder), items) if f]
    for failure in failures:
        print(failure)
    for document, line, _ in skipped:
        print(f"{document}:{line}: skipped: it imports ChaosConsole, and {BUILD} has no Console trait")
    print(f"doc snippets: {len(items) - len(failures)} compiled, {len(failures)} did not, {len(skipped)} skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
