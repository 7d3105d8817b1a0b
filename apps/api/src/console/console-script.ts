/**
 * The console's one script, served at `/app/assets/console.js` (the CSP allows only scripts of the console's
 * origin). It does two things a server-rendered page cannot:
 * - Times marked `data-local` (to the second, rendered in UTC) are shown in the viewer's time zone; the UTC
 *   text stays as the element's title.
 * - A page whose body carries `data-refresh="N"` (the overview while an initial sync runs) is updated in place:
 *   every N seconds the script fetches the same URL and swaps in the new `<main>`, keeping the focused element
 *   by its id, until the fetched page no longer asks for refreshing. Without JavaScript the same page reloads
 *   itself through a `<noscript>` meta refresh.
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
  localTimes();
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
