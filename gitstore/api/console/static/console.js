// The console's one script; every page reads fine without it (docs/ui.md).
// - Node page: a key's provenance is fetched when the key is opened (the tree does not carry
//   it: a controller's ~1,600 keys would triple the page), from the tree's `data-why` URL;
//   a folded subtree (a large mapping or list, `details.folded`) is fetched when opened, from
//   the link it holds (the page without JavaScript follows it), and so are the next keys of
//   a mapping too long for one tree (`li.more`); "Expand all" and
//   "Collapse all" open or close every mapping of the values trees, leaving folded subtrees
//   that were never opened folded (opening them all would fetch what folding spared).
// - Graph page: the drawing opens fitted to its box (the style sheet); zoom buttons scale
//   it in steps.
"use strict";

// A key's dotted path: its own key and those of the mappings around it, up the tree (a
// subtree's own page starts at the subtree's key, its `data-prefix`).
function keyPath(tree, details) {
  const keys = tree.dataset.prefix ? [tree.dataset.prefix] : [];
  const at = keys.length;
  for (let here = details; here; here = here.parentElement.closest("ul.tree details")) {
    keys.splice(at, 0, here.querySelector(":scope > summary > code").textContent);
  }
  return keys.join(".");
}

function fetchHtml(url) {
  return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
    .then((response) => response.ok ? response.text()
      : Promise.reject(new Error(response.status + " " + response.statusText)));
}

// A folded subtree: its link's page as a fragment, in place of the link (a mapping's keys
// into its list, a list's JSON into its value).
function loadSubtree(details) {
  if (details.dataset.fetched) return;
  const link = details.querySelector(":scope > ul > li > a.fold, :scope > p.fold > a.fold");
  if (!link) return;
  details.dataset.fetched = "1";
  const holder = link.parentElement;
  const note = document.createElement("span");
  note.setAttribute("aria-live", "polite");
  note.textContent = "Loading…";
  holder.append(" ", note);
  fetchHtml(link.href + "&fragment=1").then((html) => {
    if (details.classList.contains("map")) {
      details.querySelector(":scope > ul").innerHTML = html;
    } else {
      details.querySelector(":scope > summary > code.value").outerHTML = html;
      holder.remove();
    }
  }, (error) => {
    note.textContent = "It could not be loaded (" + error.message + ").";
    delete details.dataset.fetched;  // opening it again tries again
  });
}

// The next keys of a long mapping, in place of the link to them.
function loadMore(link) {
  const item = link.parentElement;
  if (item.dataset.fetched) return;
  item.dataset.fetched = "1";
  fetchHtml(link.href + "&fragment=1").then((html) => {
    item.insertAdjacentHTML("beforebegin", html);
    item.remove();
  }, (error) => {
    link.after(" (they could not be loaded: " + error.message + ")");
    delete item.dataset.fetched;
  });
}

function loadProvenance(tree, details) {
  if (details.dataset.loaded) return;
  details.dataset.loaded = "1";
  const box = document.createElement("div");
  box.className = "why";
  box.setAttribute("aria-live", "polite");
  box.textContent = "Loading the provenance…";
  details.append(box);
  const url = tree.dataset.why + (tree.dataset.why.includes("?") ? "&" : "?") +
    "fragment=1&key=" + encodeURIComponent(keyPath(tree, details));
  fetchHtml(url).then((html) => { box.innerHTML = html; },
      (error) => {
        box.textContent = "The provenance could not be loaded (" + error.message + ").";
        delete details.dataset.loaded;  // opening the key again tries again
      });
}

function zoomable(figure, controls) {
  const svg = figure.querySelector("svg");
  if (!svg) return;
  const fitted = svg.getBoundingClientRect().width;  // the style sheet fits it to the box
  let scale = 1;
  controls.hidden = false;
  controls.addEventListener("click", (event) => {
    const step = event.target.dataset && event.target.dataset.zoom;
    if (!step) return;
    scale = step === "fit" ? 1 : Math.min(Math.max(scale * (step === "in" ? 2 : 0.5), 1), 32);
    svg.style.maxWidth = scale === 1 ? "" : "none";
    svg.style.width = scale === 1 ? "" : (fitted * scale) + "px";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const figure = document.querySelector("figure.graph");
  const controls = document.querySelector("p.zoom");
  if (figure && controls) zoomable(figure, controls);
  for (const tree of document.querySelectorAll("ul.tree[data-why]")) {
    // `toggle` does not bubble: listen while it passes down (capture).
    tree.addEventListener("toggle", (event) => {
      const details = event.target;
      if (!details.open) return;
      if (details.classList.contains("folded")) loadSubtree(details);
      if (!details.classList.contains("map")) loadProvenance(tree, details);
    }, true);
    tree.addEventListener("click", (event) => {
      const link = event.target.closest("li.more > a.more");
      if (!link) return;
      event.preventDefault();
      loadMore(link);
    });
  }
  for (const button of document.querySelectorAll("button[data-open]")) {
    button.hidden = false;
    button.addEventListener("click", () => {
      const open = button.dataset.open === "all";
      for (const details of document.querySelectorAll("ul.tree details.map")) {
        if (!open || !details.classList.contains("folded") || details.dataset.fetched) {
          details.open = open;
        }
      }
    });
  }
});
