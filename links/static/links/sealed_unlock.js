// The locked page of an encrypted link whose secret is wrapped with its
// password (docs/encryption.md, "A password instead of the fragment"). The
// password never leaves this page: it derives the wrapping key and the
// verifier (pages/e2e_password.js); the verifier is what the form posts, as
// the link's password, under the link's usual throttles, and the server's
// answer sets the unlock cookie. The wrapped secret then comes with the
// sealed metadata, opens here, and the page goes on to /s/<token>#<secret>,
// where the link's own page finds the secret as with a whole link.
(function () {
  "use strict";
  var form = document.querySelector("form[data-wrapped]");
  if (!form) return;
  var passwords = window.microcloudE2EPassword;
  var needsScript = document.querySelector("[data-needs-script]");
  if (!passwords || !window.fetch || !window.DOMParser || !(window.crypto && window.crypto.subtle)) return;
  var input = form.querySelector("input[type=password]");
  var button = form.querySelector("button[type=submit]");
  var status = form.querySelector("[data-unlock-status]");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]");
  // The raw password must not be posted even if this script broke half-way.
  input.removeAttribute("name");
  form.hidden = false;
  if (needsScript) needsScript.hidden = true;
  input.focus();

  function showError(text) {
    var error = form.querySelector("#password-error");
    if (!error) {
      error = document.createElement("p");
      error.id = "password-error";
      error.className = "error";
      error.setAttribute("role", "alert");
      form.insertBefore(error, status);
    }
    error.textContent = text;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", "password-error");
    status.textContent = "";
    button.disabled = false;
    input.focus();
  }

  // What the server's refusal page says: the page's own wrong-password line
  // (with the tries left) or the heading and text of the answer (throttled,
  // ended).
  function refusalText(html) {
    var page = new DOMParser().parseFromString(html, "text/html");
    var error = page.querySelector("#password-error");
    if (error) return error.textContent;
    var main = page.querySelector("main");
    var words = main ? main.innerText || main.textContent : "";
    return words.replace(/\s+/g, " ").trim() || form.dataset.failedText;
  }

  function prove(verifier) {
    var body = new URLSearchParams();
    body.set("csrfmiddlewaretoken", csrf.value);
    body.set("password", verifier);
    // manual: the 303 back to the link (which sets the unlock cookie) is
    // not followed; following it without Accept: text/html would download.
    return fetch(form.dataset.linkUrl, {
      method: "POST",
      body: body,
      headers: { Accept: "text/html" },
      credentials: "same-origin",
      redirect: "manual",
    }).then(function (response) {
      if (response.type === "opaqueredirect") return true;
      return response.text().then(function (html) {
        throw new Refused(refusalText(html));
      });
    });
  }

  function Refused(text) {
    this.text = text;
  }

  function wrappedSecret() {
    return fetch(form.dataset.sealedUrl, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      var wrapped = response.headers.get("X-Wrapped-Secret");
      if (!response.ok || !wrapped) {
        return response.text().then(function (text) {
          throw new Refused(text.trim() || form.dataset.failedText);
        });
      }
      return wrapped;
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var password = input.value;
    if (!password) return;
    button.disabled = true;
    status.textContent = form.dataset.workingText;
    fetch(form.dataset.keyUrl, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (!response.ok) {
          return response.text().then(function (text) {
            throw new Refused(text.trim() || form.dataset.failedText);
          });
        }
        return response.json();
      })
      .then(function (parameters) {
        return passwords.unlock(password, parameters);
      })
      .then(function (unlocked) {
        return prove(unlocked.verifier)
          .then(wrappedSecret)
          .then(function (wrapped) {
            return unlocked.open(wrapped);
          });
      })
      .then(function (secret) {
        // The page is the link's own: only the fragment changes, which
        // navigates within this (locked) document, so it is loaded again,
        // now behind the unlock cookie, with the secret in location.hash.
        window.location.replace(form.dataset.linkUrl + "#" + window.microcloudECE.secretText(secret));
        window.location.reload();
      })
      .catch(function (error) {
        showError(error instanceof Refused ? error.text : form.dataset.failedText);
      });
  });
})();
