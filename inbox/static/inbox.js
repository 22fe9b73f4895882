// Warden operator inbox: live updates. Everything works without this script; it only
// keeps the pending count and list current (server-sent events) and refreshes the
// relative times. It never decides anything.
(function () {
  'use strict';

  var body = document.body;
  var eventsURL = body.getAttribute('data-events');
  var countEl = document.getElementById('pending-count');
  var liveEl = document.getElementById('live');
  var box = document.getElementById('pending-live');
  var baseTitle = document.title.replace(/^\(\d+\) /, '');

  // rel formats like the server's relTime: "just now", "45s ago", "3m ago", "in 2h".
  function rel(then, now) {
    var d = now - then;
    var future = d < 0;
    if (future) { d = -d; }
    var s = Math.floor(d / 1000);
    var text;
    if (s < 5) { return future ? 'in a moment' : 'just now'; }
    if (s < 60) { text = s + 's'; }
    else if (s < 3600) { text = Math.floor(s / 60) + 'm'; }
    else if (s < 48 * 3600) { text = Math.floor(s / 3600) + 'h'; }
    else { text = Math.floor(s / 86400) + 'd'; }
    return future ? 'in ' + text : text + ' ago';
  }

  function refreshTimes(root) {
    var now = Date.now();
    var els = (root || document).querySelectorAll('time[data-rel]');
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute('datetime'));
      if (!isNaN(t)) { els[i].textContent = rel(t, now); }
    }
  }
  setInterval(refreshTimes, 15000);

  function setLive(state, text) {
    if (!liveEl) { return; }
    liveEl.className = 'live live-' + state;
    liveEl.title = 'Live updates: ' + text;
  }

  function setCount(n) {
    if (countEl) {
      countEl.textContent = String(n);
      countEl.classList.toggle('zero', n === 0);
    }
    document.title = (n > 0 ? '(' + n + ') ' : '') + baseTitle;
  }

  function items(list) {
    var out = [];
    var els = list.querySelectorAll('[data-id]');
    for (var i = 0; i < els.length; i++) { out.push(els[i]); }
    return out;
  }

  // merge brings the open list in line with a freshly rendered one without disturbing
  // the cards the operator may be working on: new cards are inserted where the server
  // put them, and cards no longer pending are greyed out and their buttons disabled.
  function merge(html) {
    var doc = new DOMParser().parseFromString(html, 'text/html');
    var fresh = doc.getElementById('pending-list');
    var cur = document.getElementById('pending-list');
    if (!fresh || !cur) { return; }
    var freshItems = items(fresh);
    var curItems = items(cur);
    if (curItems.length === 0 || freshItems.length === 0) {
      var all = document.importNode(fresh, true);
      var known = {};
      curItems.forEach(function (el) { known[el.getAttribute('data-id')] = true; });
      items(all).forEach(function (el) {
        if (!known[el.getAttribute('data-id')]) { el.classList.add('arrived'); }
      });
      cur.replaceWith(all);
      refreshTimes(all);
      return;
    }
    var byID = {};
    curItems.forEach(function (el) { byID[el.getAttribute('data-id')] = el; });
    var keep = {};
    freshItems.forEach(function (el) { keep[el.getAttribute('data-id')] = true; });
    curItems.forEach(function (el) {
      if (keep[el.getAttribute('data-id')] || el.classList.contains('gone')) { return; }
      el.classList.add('gone');
      var buttons = el.querySelectorAll('button, textarea');
      for (var i = 0; i < buttons.length; i++) { buttons[i].disabled = true; }
      var note = document.createElement('p');
      note.className = 'flash flash-info gone-note';
      note.textContent = 'No longer pending: decided elsewhere or expired.';
      var head = el.querySelector('.card-head');
      if (head) { head.after(note); } else { el.prepend(note); }
    });
    var prev = null;
    freshItems.forEach(function (f) {
      var id = f.getAttribute('data-id');
      var el = byID[id];
      if (!el) {
        el = document.importNode(f, true);
        el.classList.add('arrived');
        if (prev) { prev.after(el); } else { cur.prepend(el); }
        refreshTimes(el);
      }
      prev = el;
    });
    cur.setAttribute('data-version', fresh.getAttribute('data-version'));
  }

  var loading = false;
  var again = false;

  function reloadList() {
    if (!box) { return; }
    if (loading) { again = true; return; }
    loading = true;
    fetch(box.getAttribute('data-src'), {
      credentials: 'same-origin',
      cache: 'no-store',
      redirect: 'manual',
      headers: { 'Accept': 'text/html' }
    }).then(function (r) {
      if (r.type === 'opaqueredirect' || !r.ok) { throw new Error('list: ' + r.status); }
      return r.text();
    }).then(merge).catch(function () {
      // Signed out or the store failed: the full page says which.
      window.location.reload();
    }).then(function () {
      loading = false;
      if (again) { again = false; reloadList(); }
    });
  }

  if (!eventsURL || !window.EventSource) { return; }
  var es = new EventSource(eventsURL);
  setLive('wait', 'connecting');
  es.addEventListener('open', function () { setLive('on', 'connected'); });
  es.addEventListener('error', function () {
    if (es.readyState === EventSource.CLOSED) { setLive('off', 'off (reload the page)'); }
    else { setLive('wait', 'reconnecting'); }
  });
  es.addEventListener('pending', function (ev) {
    var st;
    try { st = JSON.parse(ev.data); } catch (e) { return; }
    setLive('on', 'connected');
    setCount(st.count);
    var cur = document.getElementById('pending-list');
    if (box && cur && cur.getAttribute('data-version') !== st.version) { reloadList(); }
  });
  es.addEventListener('signedout', function () {
    es.close();
    window.location.reload();
  });
}());
