// The nav's push button (gateway/http/web/push.py). It registers the service worker (/sw.js),
// subscribes this browser with the gateway's VAPID key, and POSTs the subscription with the
// page's CSRF token; pressed again, it unsubscribes. Without Push support it stays hidden.
(function () {
  "use strict";
  var button = document.getElementById("push-toggle");
  if (!button || !("serviceWorker" in navigator) || !("PushManager" in window)) {
    return;
  }

  function applicationServerKey(b64url) {
    var b64 = b64url.replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(b64 + "===".slice((b64.length + 3) % 4));
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) {
      out[i] = raw.charCodeAt(i);
    }
    return out;
  }

  function post(path, fields) {
    fields.csrf = button.getAttribute("data-csrf");
    return fetch(path, { method: "POST", body: new URLSearchParams(fields), credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok) {
          throw new Error(path + ": " + resp.status);
        }
      });
  }

  function show(registration, subscription) {
    button.hidden = false;
    button.disabled = false;
    button.textContent = subscription ? "Stop notifications" : "Notify this device";
    button.onclick = function () {
      button.disabled = true;
      var done = subscription ? stop(subscription) : start(registration);
      done.then(function (now) { show(registration, now); }, function () { show(registration, subscription); });
    };
  }

  function start(registration) {
    var key = applicationServerKey(button.getAttribute("data-key"));
    return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })
      .then(function (subscription) {
        var json = subscription.toJSON();
        return post("/push/subscribe", {
          endpoint: json.endpoint, p256dh: json.keys.p256dh, auth: json.keys.auth
        }).then(function () { return subscription; });
      });
  }

  function stop(subscription) {
    var endpoint = subscription.endpoint;
    return subscription.unsubscribe()
      .then(function () { return post("/push/unsubscribe", { endpoint: endpoint }); })
      .then(function () { return null; });
  }

  navigator.serviceWorker.register("/sw.js", { scope: "/" })
    .then(function (registration) {
      return registration.pushManager.getSubscription().then(function (subscription) {
        show(registration, subscription);
      });
    })
    .catch(function () { button.hidden = true; });
})();
