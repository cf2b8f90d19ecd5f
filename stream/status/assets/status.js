// odwatch status page: refresh in place after every evaluation. The page
// polls /api/streams; when its version differs from the one this page was
// rendered at, it fetches the page again and swaps the content, so that
// nothing flickers and the scroll position stays.
(function () {
  "use strict";
  var every = 2000;
  var busy = false;
  function mark(ok) {
    var live = document.getElementById("live");
    if (live) { live.className = ok ? "live" : "live stale"; }
  }
  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var next = doc.getElementById("content");
    var cur = document.getElementById("content");
    if (!next || !cur) { return; }
    cur.replaceWith(document.importNode(next, true));
    document.body.dataset.version = doc.body.dataset.version || "";
  }
  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch("/api/streams", { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(function (v) {
        mark(true);
        if (v.version === document.body.dataset.version) { return null; }
        return fetch(location.href, { cache: "no-store", credentials: "same-origin" })
          .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
          .then(swap);
      })
      .catch(function () { mark(false); })
      .then(function () { busy = false; });
  }
  setInterval(poll, every);
})();
