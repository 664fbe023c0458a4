// Live refresh: an element with data-refresh is replaced, data-interval
// milliseconds after the previous answer, by the HTML its URL returns. No
// framework, no reload; one request at a time, and none while the tab is
// hidden.
(function () {
  "use strict";
  var live = document.querySelector("[data-refresh]");
  if (!live) { return; }
  var every = parseInt(live.getAttribute("data-interval"), 10) || 5000;
  function later() { setTimeout(refresh, every); }
  function refresh() {
    if (document.hidden) { later(); return; }
    fetch(live.getAttribute("data-refresh"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.status === 401) { window.location.assign("/login"); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) { if (html !== null) { live.innerHTML = html; live.setAttribute("data-updated", String(Date.now())); } })
      .catch(function () { /* the next tick tries again */ })
      .then(later);
  }
  later();
})();
