// Live refresh: an element with data-refresh is replaced, every
// data-interval milliseconds, by the HTML its URL returns. No framework, no
// reload; polling pauses while the tab is hidden.
(function () {
  "use strict";
  var live = document.querySelector("[data-refresh]");
  if (!live) { return; }
  var every = parseInt(live.getAttribute("data-interval"), 10) || 5000;
  function refresh() {
    if (document.hidden) { return; }
    fetch(live.getAttribute("data-refresh"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.status === 401) { window.location.assign("/login"); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) { if (html !== null) { live.innerHTML = html; live.setAttribute("data-updated", String(Date.now())); } })
      .catch(function () { /* the next tick tries again */ });
  }
  setInterval(refresh, every);
})();
