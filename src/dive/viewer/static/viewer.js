// dive viewer: live updates (server-sent events). The pages work without this script.
(function () {
  "use strict";
  var live = document.body.getAttribute("data-live");
  if (!live || !window.EventSource || !window.fetch) return;
  var status = document.querySelector(".live-status");
  var busy = false;

  function editing() {
    var active = document.activeElement;
    if (active && active.closest && active.closest("main form")) return true;
    var fields = document.querySelectorAll("main input[type=text], main textarea, main input[type=number]");
    for (var i = 0; i < fields.length; i++) { if (fields[i].value) return true; }
    return false;
  }

  function refresh() {
    if (busy) return;
    if (editing()) { if (status) status.textContent = "Updated: reload to see the changes."; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelector("main");
        var nav = doc.querySelector("header.top nav");
        if (fresh) document.querySelector("main").innerHTML = fresh.innerHTML;
        if (nav) document.querySelector("header.top nav").innerHTML = nav.innerHTML;
        if (status) status.textContent = "Updated " + new Date().toLocaleTimeString();
        document.body.setAttribute("data-updated", String(Date.now()));
      })
      .catch(function () { if (status) status.textContent = "Could not refresh: reload the page."; })
      .then(function () { busy = false; });
  }

  var source = new EventSource(live, { withCredentials: true });
  source.addEventListener("change", refresh);
  source.onerror = function () { if (status) status.textContent = "Live updates paused…"; };
  source.onopen = function () { if (status) status.textContent = "Live"; };
})();
