// The dashboard page: polls the session list, refreshes thumbnails while visible, and runs the
// large live view with takeover. Every piece of data goes into the page with textContent.
'use strict';

(() => {
	const csrf = document.querySelector('meta[name="csrf-token"]').content;
	const SESSIONS_EVERY = 1000; // ms between session list polls
	const THUMB_EVERY = 1000; // ms after one thumbnail arrived before the next is asked for
	const LIVE_EVERY = 200; // the same for the large view
	const KEYS = ['Enter', 'Backspace', 'Tab', 'Escape', 'Delete', 'ArrowLeft', 'ArrowUp', 'ArrowRight', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'];

	const cardsList = document.getElementById('cards');
	const empty = document.getElementById('empty');
	const summary = document.getElementById('summary');
	const viewer = document.getElementById('viewer');
	const viewerTitle = document.getElementById('viewer-title');
	const viewerUrl = document.getElementById('viewer-url');
	const viewerStatus = document.getElementById('viewer-status');
	const takeoverButton = document.getElementById('takeover');
	const releaseButton = document.getElementById('release');
	const screen = document.getElementById('screen');
	const live = document.getElementById('live');

	const cards = new Map(); // session id -> card parts
	let viewing = null; // the session id in the large view
	let opener = null; // the button that opened it, focused again on close
	let mine = false; // this page holds the takeover of the viewed session
	let generation = 0; // frame loops of an older generation stop (the view opened or closed since)

	const api = (sid, what) => `/dashboard/api/sessions/${encodeURIComponent(sid)}/${what}`;

	function el(tag, className, text) {
		const node = document.createElement(tag);
		if (className) node.className = className;
		if (text !== undefined) node.textContent = text;
		return node;
	}

	function duration(seconds) {
		if (seconds === null || seconds === undefined) return 'never';
		let s = Math.max(0, Math.round(seconds));
		if (s < 60) return `${s} s`;
		const m = Math.floor(s / 60);
		s %= 60;
		if (m < 60) return `${m} min ${s} s`;
		return `${Math.floor(m / 60)} h ${m % 60} min`;
	}

	async function post(sid, what, body) {
		const response = await fetch(api(sid, what), {
			method: 'POST',
			credentials: 'same-origin',
			headers: { 'X-CSRF-Token': csrf, 'Content-Type': 'application/json' },
			body: JSON.stringify(body || {}),
		});
		let data = {};
		try { data = await response.json(); } catch (_) { /* no body */ }
		if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
		return data;
	}

	// A frame loop: fetch a frame, show it, wait, again; stops when ``keep()`` says so.
	function frames(sid, size, img, every, keep) {
		let shown = null;
		const step = async () => {
			if (!keep()) {
				if (shown) URL.revokeObjectURL(shown);
				return;
			}
			if (!document.hidden) {
				try {
					const response = await fetch(`${api(sid, 'frame.jpg')}?size=${size}&t=${Date.now()}`, { credentials: 'same-origin' });
					if (response.ok) {
						const url = URL.createObjectURL(await response.blob());
						img.src = url;
						img.classList.add('loaded');
						if (shown) URL.revokeObjectURL(shown);
						shown = url;
					}
				} catch (_) { /* the server is busy or gone: try again */ }
			}
			setTimeout(step, every);
		};
		setTimeout(step, 0); // after the caller has registered what ``keep`` looks for
	}

	function row(dl, label) {
		const dt = el('dt', '', label);
		const dd = el('dd');
		dl.append(dt, dd);
		return dd;
	}

	function makeCard(sid) {
		const li = el('li', 'card');
		li.dataset.sid = sid;
		const head = el('div', 'card-head');
		const name = el('h2', 'sid', sid);
		name.title = sid;
		const badges = el('div', 'badges');
		head.append(name, badges);
		const thumb = el('button', 'thumb');
		thumb.type = 'button';
		thumb.setAttribute('aria-label', `Open the live view of session ${sid}`);
		const img = el('img');
		img.alt = '';
		thumb.append(img);
		const meta = el('dl', 'meta');
		const replay = el('a', 'replay', 'Replay recording'); // shown when the session is recorded
		replay.hidden = true;
		const parts = {
			li, name, badges, thumb, img, replay,
			url: row(meta, 'URL'), title: row(meta, 'Title'), tabs: row(meta, 'Tabs'),
			state: row(meta, 'Now'), expires: row(meta, 'Expires in'),
		};
		const calls = el('details', 'calls');
		calls.open = true;
		parts.callsSummary = el('summary', '', 'Recent calls');
		parts.callsList = el('ol');
		calls.append(parts.callsSummary, parts.callsList);
		const actions = el('div', 'actions');
		const open = el('button', 'open', 'Open live view');
		open.type = 'button';
		const close = el('button', 'danger', 'Close session');
		close.type = 'button';
		actions.append(open, replay, close);
		li.append(head, thumb, meta, calls, actions);
		thumb.addEventListener('click', () => openViewer(sid, thumb));
		open.addEventListener('click', () => openViewer(sid, open));
		close.addEventListener('click', async () => {
			if (!window.confirm(`Close session ${sid}? Its browser, tabs and cookies are gone for good.`)) return;
			close.disabled = true;
			try { await post(sid, 'close'); } catch (error) { window.alert(`Could not close: ${error.message}`); }
			close.disabled = false;
			refresh();
		});
		thumbs(sid, parts);
		return parts;
	}

	function thumbs(sid, parts) {
		const g = generation;
		frames(sid, 'thumb', parts.img, THUMB_EVERY, () => cards.get(sid) === parts && viewing === null && g === generation);
	}

	function badge(parent, text, kind) {
		parent.append(el('span', `badge ${kind || ''}`, text));
	}

	function update(parts, s) {
		parts.badges.replaceChildren();
		if (s.default) badge(parts.badges, 'default');
		badge(parts.badges, s.location, 'muted');
		if (s.takeover) badge(parts.badges, s.takeover.mine ? 'you are driving' : 'a person is driving', 'person');
		else if (s.running) badge(parts.badges, 'busy', 'busy');
		else badge(parts.badges, 'idle', 'idle');
		parts.url.textContent = s.current_url || '—';
		parts.url.title = s.current_url || '';
		parts.title.textContent = s.title || '—';
		parts.tabs.textContent = String(s.tabs);
		if (s.takeover) {
			parts.state.textContent = s.takeover.holding ? `taken over (ends after ${duration(s.takeover.remaining)} without input)` : 'waiting to take over';
		} else if (s.running) {
			parts.state.textContent = `${s.running.tool}(${s.running.args}) for ${duration(s.running.elapsed)}`;
		} else {
			parts.state.textContent = `idle for ${duration(s.idle_seconds)}`;
		}
		parts.expires.textContent = duration(s.expires_in_seconds);
		parts.callsSummary.textContent = `Recent calls (${s.calls.length})`;
		parts.callsList.replaceChildren(...s.calls.map((c) => {
			const item = el('li', c.ok ? 'ok' : 'error');
			item.append(el('span', 'mark', c.ok ? '✓' : '✗'), el('code', 'tool', c.tool), el('span', 'args', c.args ? `(${c.args})` : '()'),
				el('span', 'ms', c.duration_ms === null ? '' : `${c.duration_ms} ms`));
			if (!c.ok && c.error) item.title = c.error;
			return item;
		}));
		parts.thumb.setAttribute('aria-label', `Open the live view of session ${s.session_id}${s.title ? `: ${s.title}` : ''}`);
		parts.replay.hidden = !s.replay;
		if (s.replay) parts.replay.href = s.replay;
	}

	const recorded = document.getElementById('recorded');
	const recordedList = document.getElementById('recorded-list');

	function showRecorded(items) {
		recorded.hidden = items.length === 0;
		recordedList.replaceChildren(...items.map((r) => {
			const item = el('li');
			const link = el('a', '', r.session_id);
			link.href = r.replay;
			const when = r.closed ? new Date(r.closed * 1000).toLocaleTimeString() : '';
			item.append(link, el('span', 'muted', ` closed ${when}; ${r.kinds.join(', ')}; ${r.size_bytes} bytes`));
			return item;
		}));
	}

	let latest = [];

	async function refresh() {
		let data;
		try {
			const response = await fetch('/dashboard/api/sessions', { credentials: 'same-origin' });
			if (response.status === 401) { window.location.reload(); return; }
			if (!response.ok) return;
			data = await response.json();
		} catch (_) { summary.textContent = 'The server does not answer.'; return; }
		latest = data.sessions;
		const seen = new Set();
		for (const s of data.sessions) {
			seen.add(s.session_id);
			let parts = cards.get(s.session_id);
			if (!parts) {
				parts = makeCard(s.session_id);
				cards.set(s.session_id, parts);
			}
			cardsList.append(parts.li); // keeps the server's order (oldest first)
			update(parts, s);
		}
		for (const [sid, parts] of cards) {
			if (!seen.has(sid)) { parts.li.remove(); cards.delete(sid); }
		}
		empty.hidden = data.sessions.length > 0;
		showRecorded(data.recorded || []);
		const busy = data.sessions.filter((s) => s.running).length;
		summary.textContent = `${data.sessions.length} session${data.sessions.length === 1 ? '' : 's'}, ${busy} busy`;
		if (viewing !== null) updateViewer();
	}

	// -- the large view and takeover ----------------------------------------------------------

	function openViewer(sid, from) {
		viewing = sid;
		opener = from;
		mine = false;
		live.removeAttribute('src');
		live.classList.remove('loaded'); // until this session's first frame arrives
		viewer.hidden = false;
		document.body.classList.add('viewing');
		updateViewer();
		const g = ++generation;
		frames(sid, 'large', live, LIVE_EVERY, () => viewing === sid && g === generation);
		takeoverButton.focus();
	}

	async function closeViewer() {
		const sid = viewing;
		if (sid !== null && mine) {
			await pending;
			try { await post(sid, 'release'); } catch (_) { /* it ends by itself after the timeout */ }
		}
		viewing = null;
		mine = false;
		viewer.hidden = true;
		document.body.classList.remove('viewing');
		generation += 1;
		for (const [id, parts] of cards) thumbs(id, parts);
		if (opener && document.contains(opener)) opener.focus();
	}

	function updateViewer() {
		const s = latest.find((x) => x.session_id === viewing);
		if (!s) {
			viewerTitle.textContent = viewing;
			viewerStatus.textContent = 'This session is closed.';
			takeoverButton.hidden = true;
			releaseButton.hidden = true;
			mine = false;
			return;
		}
		viewerTitle.textContent = s.session_id;
		viewerUrl.textContent = s.current_url || '';
		mine = Boolean(s.takeover && s.takeover.mine && s.takeover.holding);
		takeoverButton.hidden = mine;
		takeoverButton.disabled = Boolean(s.takeover && !s.takeover.mine);
		releaseButton.hidden = !mine;
		screen.classList.toggle('driving', mine);
		if (mine) viewerStatus.textContent = `You are driving: the agent's calls wait. Ends after ${duration(s.takeover.remaining)} without input.`;
		else if (s.takeover) viewerStatus.textContent = 'Someone else is driving this session.';
		else if (s.running) viewerStatus.textContent = `The agent is running ${s.running.tool} (${duration(s.running.elapsed)}).`;
		else viewerStatus.textContent = 'Watching. Take over to click, scroll and type in the page.';
	}

	takeoverButton.addEventListener('click', async () => {
		const sid = viewing;
		takeoverButton.disabled = true;
		viewerStatus.textContent = "Taking over: waiting for the agent's current call to end…";
		try {
			await post(sid, 'takeover');
			mine = true;
			takeoverButton.hidden = true;
			releaseButton.hidden = false;
			screen.focus();
		} catch (error) {
			viewerStatus.textContent = `Could not take over: ${error.message}`;
		}
		takeoverButton.disabled = false;
		refresh();
	});

	releaseButton.addEventListener('click', async () => {
		await pending; // what the person typed reaches the page before the agent gets it back
		try { await post(viewing, 'release'); } catch (error) { viewerStatus.textContent = `Could not release: ${error.message}`; }
		mine = false;
		releaseButton.hidden = true;
		takeoverButton.hidden = false;
		takeoverButton.focus();
		refresh();
	});

	document.getElementById('viewer-close').addEventListener('click', closeViewer);

	let pending = Promise.resolve(); // input goes out one event at a time, in order

	function send(event) {
		if (!mine || viewing === null) return;
		const sid = viewing;
		pending = pending.then(() => post(sid, 'input', event)).catch((error) => { viewerStatus.textContent = error.message; });
	}

	function position(event) {
		const box = live.getBoundingClientRect();
		const clamp = (v) => Math.min(1, Math.max(0, v));
		return { x: clamp((event.clientX - box.left) / box.width), y: clamp((event.clientY - box.top) / box.height) };
	}

	live.addEventListener('click', (event) => {
		if (!mine) return;
		event.preventDefault();
		screen.focus();
		send({ kind: 'click', ...position(event) });
	});

	let wheel = null;
	live.addEventListener('wheel', (event) => {
		if (!mine) return;
		event.preventDefault();
		if (wheel === null) {
			wheel = { kind: 'scroll', ...position(event), dx: 0, dy: 0 };
			setTimeout(() => {
				const w = wheel;
				wheel = null;
				w.dx = Math.max(-5000, Math.min(5000, Math.round(w.dx)));
				w.dy = Math.max(-5000, Math.min(5000, Math.round(w.dy)));
				send(w);
			}, 100);
		}
		wheel.dx += event.deltaX;
		wheel.dy += event.deltaY;
	}, { passive: false });

	screen.addEventListener('keydown', (event) => {
		if (!mine) return;
		if (event.ctrlKey || event.metaKey || event.altKey) return;
		if (event.key.length === 1) send({ kind: 'text', text: event.key });
		else if (KEYS.includes(event.key)) send({ kind: 'key', key: event.key });
		else return;
		event.preventDefault();
	});

	screen.addEventListener('paste', (event) => {
		if (!mine) return;
		const text = event.clipboardData.getData('text');
		if (text) send({ kind: 'text', text: text.slice(0, 2000) });
		event.preventDefault();
	});

	// Escape leaves the large view, except while driving with the focus on the page (it goes to the page then)
	document.addEventListener('keydown', (event) => {
		if (event.key === 'Escape' && viewing !== null && !(mine && event.target === screen)) closeViewer();
	});

	document.getElementById('logout').addEventListener('click', async () => {
		await fetch('/dashboard/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf } });
		window.location.reload();
	});

	refresh();
	setInterval(() => { if (!document.hidden) refresh(); }, SESSIONS_EVERY);
})();
