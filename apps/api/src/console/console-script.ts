/**
 * The console's one script, served at `/app/assets/console.js` (the CSP allows only scripts of the console's
 * origin). A page whose body carries `data-refresh="N"` (the overview while an initial sync runs) is updated
 * in place: every N seconds the script fetches the same URL and swaps in the new `<main>`, keeping the focused
 * element by its id, until the fetched page no longer asks for refreshing. Without JavaScript the same page
 * reloads itself through a `<noscript>` meta refresh.
 */
export const CONSOLE_JS = `(function () {
  'use strict';
  var seconds = Number(document.body.getAttribute('data-refresh'));
  if (!seconds) return;
  function swap(text) {
    var next = new DOMParser().parseFromString(text, 'text/html');
    var main = document.getElementById('main');
    var fresh = next.getElementById('main');
    if (!main || !fresh) return false;
    var focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.id : '';
    main.innerHTML = fresh.innerHTML;
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
