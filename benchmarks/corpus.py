"""Real documentation pages for the page-state benchmarks, served on 127.0.0.1.

``python -m benchmarks.corpus --setup`` installs the Debian packages that ship them (apt-get, as
root); ``python -m benchmarks.corpus`` serves them and prints each page's element count. The
pages are the HTML of ``python3.11-doc``, ``postgresql-doc-15`` and ``libjs-bootstrap5-doc`` as
Debian ships it (nothing they load leaves loopback), chosen for their shapes: long reference
text, big tables, many links, a JavaScript app (Sphinx's search page, which renders its results
from a search index in the page) and forms. The synthetic heavy page of the test site
(``harness/pages.py``) is in the corpus too. A page whose package is missing is left out (tests
fall back to the synthetic pages; the benchmark says which pages it used).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DOC = Path('/usr/share/doc')
# mount point on the corpus server -> (Debian package, directory it installs)
ROOTS = {
	'python': ('python3.11-doc', DOC / 'python3.11' / 'html'),
	'postgres': ('postgresql-doc-15', DOC / 'postgresql-doc-15' / 'html'),
	'bootstrap': ('libjs-bootstrap5-doc', DOC / 'libjs-bootstrap5'),
}


@dataclass(frozen=True)
class CorpusPage:
	name: str
	shape: str
	path: str  # on the corpus server (or the test site, for the synthetic page)
	synthetic: bool = False

	@property
	def root(self) -> str:
		return self.path.strip('/').split('/', 1)[0]


PAGES = (
	CorpusPage('bootstrap checkout', 'a form (inputs, selects, radios, checkboxes)', '/bootstrap/examples/checkout/index.html'),
	CorpusPage('bootstrap cheatsheet', 'components and forms', '/bootstrap/examples/cheatsheet/index.html'),
	CorpusPage('python search', 'a JS app: Sphinx search renders its results', '/python/search.html?q=socket'),
	CorpusPage('postgres monitoring-stats', 'reference text with tables', '/postgres/monitoring-stats.html'),
	CorpusPage('postgres sql-keywords', 'one big table (~850 rows)', '/postgres/sql-keywords-appendix.html'),
	CorpusPage('synthetic heavy', 'harness/pages.py /heavy: table, links, inputs, cards, hidden', '/heavy', synthetic=True),
	CorpusPage('postgres bookindex', 'an index: many links', '/postgres/bookindex.html'),
	CorpusPage('python stdtypes', 'long reference text', '/python/library/stdtypes.html'),
)
# ~35,000 elements: beyond what a loaded 2-core machine captures within browser-use's 30 s budget
# with the patch off; measured only when asked for (--pages genindex)
EXTRA = (CorpusPage('python genindex-all', 'the whole index: very many links', '/python/genindex-all.html'),)


def available(page: CorpusPage) -> bool:
	return page.synthetic or ROOTS[page.root][1].is_dir()


def packages() -> list[str]:
	return sorted({package for package, _ in ROOTS.values()})


def setup() -> None:
	"""Install the packages that ship the pages (Debian; needs root or sudo)."""
	missing = [package for package, directory in ROOTS.values() if not directory.is_dir()]
	if not missing:
		return
	sudo = [] if os.geteuid() == 0 else ['sudo']
	env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
	install = [*sudo, 'apt-get', 'install', '-y', '-qq', *missing]
	if subprocess.run(install, env=env, check=False).returncode != 0:
		subprocess.run([*sudo, 'apt-get', 'update', '-qq'], env=env, check=True)
		subprocess.run(install, env=env, check=True)


class _Handler(SimpleHTTPRequestHandler):
	"""Files under ROOTS, by mount point; nothing else."""

	disable_nagle_algorithm = True  # as web servers do: no response waits for the browser's delayed ACK

	def translate_path(self, path: str) -> str:
		path = path.split('?', 1)[0].split('#', 1)[0]
		mount, _, rest = path.lstrip('/').partition('/')
		if mount not in ROOTS:
			return '/nonexistent'
		self.directory = str(ROOTS[mount][1])
		return super().translate_path('/' + rest)

	def end_headers(self) -> None:
		self.send_header('Cache-Control', 'no-store')
		super().end_headers()

	def log_message(self, *args: object) -> None:
		pass


class CorpusServer:
	"""The corpus on 127.0.0.1 (a random port)."""

	def __init__(self) -> None:
		self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Handler, directory='/nonexistent'))
		self.httpd.daemon_threads = True
		self.httpd.handle_error = lambda *_: None  # a browser dropping a connection is not news
		self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

	@property
	def url(self) -> str:
		return f'http://127.0.0.1:{self.httpd.server_address[1]}'

	def __enter__(self) -> CorpusServer:
		self.thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		self.httpd.shutdown()
		self.httpd.server_close()


COUNT_ELEMENTS = "document.querySelectorAll('*').length"


def main() -> None:
	parser = argparse.ArgumentParser(prog='python -m benchmarks.corpus', description=__doc__)
	parser.add_argument('--setup', action='store_true', help=f'apt-get install {" ".join(packages())}')
	args = parser.parse_args()
	if args.setup:
		setup()
	for page in (*PAGES, *EXTRA):
		print(f'{page.name:28} {"yes" if available(page) else "MISSING":8} {page.path}  ({page.shape})')
	if not shutil.which('apt-get'):
		print('(no apt-get here: the Debian pages cannot be installed)')


if __name__ == '__main__':
	main()
