#!/usr/bin/env python
"""The browser files the slides and the classroom page need, from the npm registry, pinned.

    python scripts/vendor.py reveal.js DEST        reveal.js's script, styles and speaker notes
    python scripts/vendor.py fontawesome DEST      Font Awesome 5's styles and fonts (Voila's icons)

A lecture hall may have no network: a deck that loads reveal.js from a CDN is then a plain page,
and a Voila page without Font Awesome shows its Play button blank. So each file comes once, when
`make slides` or `make demo` runs (a network is needed then, as for `pip install`), from a package
the npm registry serves, at the version pinned here and checked against the registry's sha512. The
tarball is kept in build/vendor/, so a second build needs no network at all. Only the files listed
are copied to DEST, in their folders (DEST/dist/reveal.js, DEST/css/all.min.css, ...).
"""
import base64
import hashlib
import io
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "vendor"
REGISTRY = "https://registry.npmjs.org"

# name: (npm package, version, its dist.integrity from the registry, the files wanted in it)
PACKAGES = {
    "reveal.js": ("reveal.js", "6.0.2",
                  "sha512-JYIg5D9aoxoaLeb84O+OvAwsKWdIavVgEDScxtYEXFCT6t6TQrhNtSgogcjdCpdLsWglhJn3zyE3fUOwiH5KEg==",
                  ["LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "dist/plugin/notes.js"]),
    "fontawesome": ("@fortawesome/fontawesome-free", "5.15.4",
                    "sha512-eYm8vijH/hpzr/6/1CJ/V/Eb1xQFW2nnUKArb3z+yUWv7HTwj6M7SP957oMjfZjAHU6qpoNc2wQvIxBLWYa/Jg==",
                    ["LICENSE.txt", "css/all.min.css", "css/v4-shims.min.css", "webfonts/"]),
}


def tarball(name):
    """The package's tarball (bytes): from build/vendor/, else from the registry, checked."""
    package, version, integrity, _ = PACKAGES[name]
    path = CACHE / f"{package.replace('/', '-').lstrip('@')}-{version}.tgz"
    if path.exists():
        data = path.read_bytes()
    else:
        url = f"{REGISTRY}/{package}/-/{package.split('/')[-1]}-{version}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                data = answer.read()
        except OSError as err:
            raise SystemExit(f"vendor.py: could not download {package} {version} from {url} ({err}); "
                             f"this needs a network once (then build/vendor/ keeps it), or put the "
                             f"file at {path}") from None
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != integrity:
        raise SystemExit(f"vendor.py: {path.name} has {digest[:30]}..., not the pinned {integrity[:30]}...: "
                         f"delete it and run again")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return data


def install(name, dest):
    """Copy the wanted files of package `name` into `dest` (made if need be); returns `dest`."""
    if name not in PACKAGES:
        raise SystemExit(f"vendor.py: {name!r} is not a package here: choose from {', '.join(PACKAGES)}")
    wanted, dest = PACKAGES[name][3], Path(dest)
    with tarfile.open(fileobj=io.BytesIO(tarball(name)), mode="r:gz") as tar:
        for member in tar.getmembers():
            inner = member.name.split("/", 1)[-1]           # npm tarballs hold package/...
            if member.isfile() and any(inner == w or (w.endswith("/") and inner.startswith(w)) for w in wanted):
                target = dest / inner
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)
    missing = [w for w in wanted if not (dest / w).exists()]
    if missing:
        raise SystemExit(f"vendor.py: {name} {PACKAGES[name][1]} has no {', '.join(missing)}")
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[0].strip() + f"\n\nusage: {sys.argv[0]} {{{','.join(PACKAGES)}}} DEST")
    install(sys.argv[1], sys.argv[2])
    print(f"{sys.argv[1]} {PACKAGES[sys.argv[1]][1]} in {sys.argv[2]}")
