/**
 * The console's one script, served at `/app/assets/console.js` (the CSP allows only scripts of the console's
 * origin). It does two things a server-rendered page cannot:
 * - Times marked `data-local` (to the second, rendered in UTC) are shown in the viewer's time zone; the UTC
 *   text stays as the element's title.
 * - A page whose body carries `data-refresh="N"` (the overview while an initial sync runs) is updated in place:
 *   every N seconds the script fetches the same URL and swaps in the new `<main>`, keeping the focused element
 *   by its id, until the fetched page no longer asks for refreshing. Without JavaScript the same page reloads
 *   itself through a `<noscript>` meta refresh.
 * - The mappings editor (`form[data-validate]`) checks the form as the person edits: it posts the form to
 *   its `data-validate` URL (the same validation as a save) and puts each issue into the `data-issues-for`
 *   list of its row; choosing a table (`select[data-reload]`) renders that pair again with the table's fields
 *   and swaps it in place (no reload, focus kept); the name input of a "create" choice shows only while that
 *   choice is picked.
 */
export const CONSOLE_JS = `(function () {
  'use strict';
  var format = new Intl.DateTimeFormat('en-GB', {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    hourCycle: 'h23', timeZoneName: 'short'
  });
  function localTimes() {
    var times = document.querySelectorAll('time[data-local]');
    for (var i = 0; i < times.length; i += 1) {
      var when = new Date(times[i].getAttribute('datetime'));
      if (isNaN(when.getTime())) continue;
      var p = {};
      format.formatToParts(when).forEach(function (part) { p[part.type] = part.value; });
      times[i].title = times[i].textContent;
      times[i].textContent = p.year + '-' + p.month + '-' + p.day + ' ' + p.hour + ':' + p.minute + ':' +
        p.second + ' ' + p.timeZoneName;
    }
  }
  function mappingsEditor(form) {
    if (!form) return;
    var timer = null;
    var sequence = 0;
    function createInputs() {
      var spans = form.querySelectorAll('[data-create-for]');
      for (var i = 0; i < spans.length; i += 1) {
        var select = document.getElementById(spans[i].getAttribute('data-create-for'));
        spans[i].hidden = !select || select.value !== '+create';
      }
    }
    function line(cls, strong, text, code) {
      var p = document.createElement('p');
      p.className = 'issue issue-' + cls;
      if (strong) { var s = document.createElement('strong'); s.textContent = strong; p.appendChild(s); p.appendChild(document.createTextNode(' ')); }
      p.appendChild(document.createTextNode(text));
      if (code) { var c = document.createElement('code'); c.textContent = code; p.appendChild(document.createTextNode(' ')); p.appendChild(c); }
      return p;
    }
    function show(result) {
      var lists = form.querySelectorAll('[data-issues-for]');
      var byAnchor = {};
      for (var i = 0; i < lists.length; i += 1) { lists[i].textContent = ''; byAnchor[lists[i].getAttribute('data-issues-for')] = lists[i]; }
      result.issues.forEach(function (issue) {
        var list = byAnchor[issue.anchor] || byAnchor[''];
        if (list) list.appendChild(line(issue.severity, issue.severity === 'error' ? 'Error:' : 'Warning:', issue.message, issue.code));
      });
      result.complete.forEach(function (anchor) {
        var list = byAnchor[anchor];
        if (list && !list.firstChild) list.appendChild(line('ok', '', 'Types compatible in the mapped direction.', ''));
      });
      var effects = document.getElementById('save-effects');
      if (effects && typeof result.effects === 'string') effects.innerHTML = result.effects;
      var status = document.getElementById('validation-status');
      if (status) status.textContent = result.errors + ' error(s), ' + result.warnings + ' warning(s).';
    }
    function check() {
      var mine = (sequence += 1);
      var body = new URLSearchParams(new FormData(form));
      fetch(form.getAttribute('data-validate'), {
        method: 'POST', body: body, credentials: 'same-origin', headers: { Accept: 'application/json' }
      })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (result) { if (result && mine === sequence) show(result); })
        .catch(function () { /* the Check button still validates on the server */ });
    }
    var loads = 0;
    // A table chosen: that pair's section is rendered again with the table's fields (the form posted with
    // "Load fields") and swapped in place, keeping focus, so arrow keys through the options never reload.
    function loadPair(section) {
      var mine = (loads += 1);
      var body = new URLSearchParams(new FormData(form));
      body.set('action', 'refresh');
      fetch(form.getAttribute('action'), {
        method: 'POST', body: body, credentials: 'same-origin', headers: { Accept: 'text/html' }
      })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (text) {
          if (text === null || mine !== loads) return;
          var fresh = new DOMParser().parseFromString(text, 'text/html').getElementById(section.id);
          if (!fresh) return;
          var focused = document.activeElement && section.contains(document.activeElement) ? document.activeElement.id : '';
          section.innerHTML = fresh.innerHTML;
          if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
          createInputs();
          check();
        })
        .catch(function () { /* the Load fields button still works */ });
    }
    form.addEventListener('change', function (event) {
      createInputs();
      var target = event.target;
      var section = target && target.closest ? target.closest('section[id^="pair-"]') : null;
      if (section && target.hasAttribute('data-reload')) { loadPair(section); return; }
      check();
    });
    form.addEventListener('input', function (event) {
      if (!event.target || event.target.type !== 'text') return;
      clearTimeout(timer);
      timer = setTimeout(check, 400);
    });
    createInputs();
  }
  localTimes();
  mappingsEditor(document.querySelector('form[data-validate]'));
  var seconds = Number(document.body.getAttribute('data-refresh'));
  if (!seconds) return;
  function swap(text) {
    var next = new DOMParser().parseFromString(text, 'text/html');
    var main = document.getElementById('main');
    var fresh = next.getElementById('main');
    if (!main || !fresh) return false;
    var focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : '';
    main.innerHTML = fresh.innerHTML;
    localTimes();
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    var again = Number(next.body.getAttribute('data-refresh'));
    if (again) return true;
    document.body.removeAttribute('data-refresh');
    return false;
  }
  function tick() {
    fetch(location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null || swap(text)) setTimeout(tick, seconds * 1000);
      })
      .catch(function () { setTimeout(tick, seconds * 2000); });
  }
  setTimeout(tick, seconds * 1000);
})();
`;
