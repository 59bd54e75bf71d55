// Live pages. SLA countdowns tick every second, and when the gateway records anything new (a
// server-sent `change` from /live) the page fetches itself and swaps its [data-live] regions.
// A region with a form the user is typing in is left alone while it still offers that form.
// Without JavaScript nothing changes: the pages are server-rendered, and a reload shows the news.
(function () {
  "use strict";

  function human(seconds) {
    var units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
    var left = Math.floor(Math.abs(seconds));
    var parts = [];
    units.forEach(function (u) {
      if (left >= u[1] || (u[0] === "s" && parts.length === 0)) {
        parts.push(Math.floor(left / u[1]) + u[0]);
        left %= u[1];
      }
    });
    return parts.slice(0, 2).join(" ");
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-deadline]").forEach(function (el) {
      var left = (Date.parse(el.getAttribute("data-deadline")) - now) / 1000;
      el.textContent = left > 0 ? "due in " + human(left) : "overdue by " + human(left);
      if (left <= 0 && el.parentNode && el.parentNode.classList) {
        el.parentNode.classList.remove("ok", "soon");
        el.parentNode.classList.add("late");
      }
    });
  }

  function typing(region) {
    var active = document.activeElement;
    if (active && region.contains(active) && /^(TEXTAREA|INPUT|SELECT)$/.test(active.tagName)) {
      return true;
    }
    return Array.prototype.some.call(region.querySelectorAll("textarea, input"), function (f) {
      if (f.type === "checkbox" || f.type === "radio") {
        return f.checked !== f.defaultChecked; // a selection in the inbox is kept too
      }
      return f.type !== "hidden" && f.value !== f.defaultValue;
    });
  }

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    document.querySelectorAll("[data-live]").forEach(function (old) {
      var name = old.getAttribute("data-live");
      var next = fresh.querySelector('[data-live="' + name + '"]');
      if (!next || next.isEqualNode(old)) {
        return;
      }
      if (typing(old) && next.querySelector("form")) {
        return; // still waiting: keep what is being typed
      }
      old.replaceWith(document.importNode(next, true));
    });
    tick();
  }

  var busy = false;
  var again = false;

  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (resp) {
        return resp.ok ? resp.text() : Promise.reject(resp.status);
      })
      .then(swap)
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  tick();
  window.setInterval(tick, 1000);
  if (window.EventSource && document.querySelector("[data-live]")) {
    new window.EventSource("/live").addEventListener("change", refresh);
  }
})();
