// The web inbox's service worker (served at /sw.js, scope /): it shows each push as a
// notification with Approve and Reject actions, and opens the action's one-time link (a page
// that asks to confirm: nothing is decided until its form is sent). A push for the same approval
// replaces the earlier notification (its tag). Only links of this gateway are opened.
"use strict";

function notification(data) {
  var links = {};
  var actions = (data.actions || []).map(function (a) {
    links[a.action] = a.url;
    return { action: a.action, title: a.title };
  });
  return {
    body: data.body || "",
    tag: data.tag,
    renotify: true,
    requireInteraction: true,
    actions: actions,
    data: { url: data.url, links: links }
  };
}

function ours(url) {
  return typeof url === "string" && url.indexOf(self.location.origin + "/") === 0;
}

self.addEventListener("push", function (event) {
  var data = event.data ? event.data.json() : {};
  event.waitUntil(self.registration.showNotification(data.title || "Approval needed", notification(data)));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var data = event.notification.data || {};
  var url = (event.action && data.links && data.links[event.action]) || data.url;
  if (ours(url)) {
    event.waitUntil(self.clients.openWindow(url));
  }
});
