(function () {
  function buffer(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) s += '=';
    var b = atob(s), a = new Uint8Array(b.length);
    for (var i = 0; i < b.length; i++) a[i] = b.charCodeAt(i);
    return a.buffer;
  }
  function b64url(buf) {
    var a = new Uint8Array(buf), s = '';
    for (var i = 0; i < a.length; i++) s += String.fromCharCode(a[i]);
    return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  function post(url, fields) {
    var body = new URLSearchParams();
    Object.keys(fields).forEach(function (k) { body.set(k, fields[k]); });
    return fetch(url, { method: 'POST', body: body, credentials: 'same-origin' }).then(function (r) {
      if (!r.ok) throw new Error('refused');
      return r.json();
    });
  }
  var webauthn = !!(window.PublicKeyCredential && navigator.credentials);

  // Sign in with a passkey.
  var signin = document.getElementById('passkey-signin');
  var signinForm = document.getElementById('passkey-form');
  if (signin && signinForm && webauthn) {
    signin.hidden = false;
    var note = document.getElementById('passkey-note');
    document.getElementById('passkey-button').addEventListener('click', function () {
      var name = document.getElementById('username');
      if (!name.value) {
        note.textContent = signin.dataset.needUsername;
        name.focus();
        return;
      }
      note.textContent = '';
      post(signin.dataset.start, { login_csrf: signinForm.elements.login_csrf.value, username: name.value })
        .then(function (o) {
          var pk = o.publicKey;
          pk.challenge = buffer(pk.challenge);
          (pk.allowCredentials || []).forEach(function (c) { c.id = buffer(c.id); });
          return navigator.credentials.get({ publicKey: pk });
        })
        .then(function (c) {
          var r = c.response;
          signinForm.elements.username.value = name.value;
          signinForm.elements.credential.value = JSON.stringify({
            id: c.id, rawId: b64url(c.rawId), type: c.type,
            response: {
              authenticatorData: b64url(r.authenticatorData), clientDataJSON: b64url(r.clientDataJSON),
              signature: b64url(r.signature), userHandle: r.userHandle ? b64url(r.userHandle) : null
            }
          });
          signinForm.submit();
        })
        .catch(function () { note.textContent = signin.dataset.failed; });
    });
  }

  // Register a passkey.
  var reg = document.getElementById('passkey-register');
  var regForm = document.getElementById('passkey-register-form');
  if (reg && regForm && webauthn) {
    reg.hidden = false;
    var regNote = document.getElementById('passkey-note');
    document.getElementById('passkey-register-button').addEventListener('click', function () {
      regNote.textContent = '';
      var description = document.getElementById('passkey-description').value;
      post(reg.dataset.start, { csrf: regForm.elements.csrf.value, description: description })
        .then(function (o) {
          var pk = o.publicKey;
          pk.challenge = buffer(pk.challenge);
          pk.user.id = buffer(pk.user.id);
          (pk.excludeCredentials || []).forEach(function (c) { c.id = buffer(c.id); });
          return navigator.credentials.create({ publicKey: pk });
        })
        .then(function (c) {
          var r = c.response;
          regForm.elements.credential.value = JSON.stringify({
            id: c.id, rawId: b64url(c.rawId), type: c.type,
            response: {
              attestationObject: b64url(r.attestationObject), clientDataJSON: b64url(r.clientDataJSON),
              transports: r.getTransports ? r.getTransports() : undefined
            }
          });
          regForm.submit();
        })
        .catch(function () { regNote.textContent = reg.dataset.failed; });
    });
  }

  // Copy a secret shown once.
  Array.prototype.forEach.call(document.querySelectorAll('[data-copy]'), function (button) {
    button.addEventListener('click', function () {
      var text = document.getElementById(button.dataset.copy).textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text);
    });
  });
})();
