// Sends the FSM action of the element the user clicked (or the form they submitted) to the site
// server, one at a time in order, then shows the page the server answers with.
(function () {
  const wg = window.__wg = { pending: 0, navigating: false };
  wg.idle = () => wg.pending === 0 && !wg.navigating && document.readyState === "complete";
  let queue = Promise.resolve();

  function toast(text) {
    const box = document.getElementById("wg-toast");
    box.textContent = text;
    box.classList.add("is-shown");
    clearTimeout(wg.toastTimer);
    wg.toastTimer = setTimeout(() => box.classList.remove("is-shown"), 4000);
  }

  function send(action, params) {
    wg.pending += 1;
    queue = queue
      .then(() => fetch("/__site/act", {
        method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
        body: JSON.stringify({ action, params }),
      }))
      .then((response) => response.json())
      .then((result) => {
        if (!result.ok) { toast(result.message || "That did not work."); return; }
        wg.navigating = true;
        window.location.assign(result.url);
      })
      .catch(() => toast("The site could not be reached."))
      .finally(() => { wg.pending -= 1; });
  }

  function formParams(form) {
    const params = JSON.parse(form.dataset.wgParams || "{}");
    for (const input of form.querySelectorAll("input[name]")) {
      if (input.type === "radio") { if (input.checked) params[input.name] = input.value; }
      else if (input.type === "checkbox") params[input.name] = input.checked;
      else params[input.name] = input.value;
    }
    return params;
  }

  // A plain link that leaves the document counts as navigating from the click on, so idle() never
  // reports the page settled between the click and the browser's own navigation.
  function leavesDocument(event) {
    const link = event.target.closest("a[href]");
    if (!link || event.defaultPrevented || (link.target && link.target !== "_self")) return false;
    const to = new URL(link.href, location.href);
    const samePage = to.origin === location.origin && to.pathname === location.pathname && to.search === location.search;
    return to.protocol.startsWith("http") && !(samePage && to.hash);
  }

  document.addEventListener("click", (event) => {
    const el = event.target.closest("[data-wg-action]");
    if (!el && leavesDocument(event)) wg.navigating = true;
    if (!el || el.tagName === "FORM" || el.tagName === "INPUT") return;
    event.preventDefault();
    if (el.disabled || el.getAttribute("aria-disabled") === "true") return;
    send(el.dataset.wgAction, JSON.parse(el.dataset.wgParams || "{}"));
  });

  document.addEventListener("change", (event) => {
    const el = event.target;
    if (el.matches("input[type=checkbox][data-wg-action]")) {
      send(el.dataset.wgAction, JSON.parse(el.dataset.wgParams || "{}"));
    }
  });

  document.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-wg-action]");
    if (!form) return;
    event.preventDefault();
    const button = form.querySelector("[data-wg-submit]");
    if (button && button.disabled) return;
    send(form.dataset.wgAction, formParams(form));
  });
})();
