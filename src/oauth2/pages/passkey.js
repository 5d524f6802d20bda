(function () {
  var box = document.getElementById('passkey');
  var form = document.getElementById('passkey-form');
  if (!box || !form || !window.PublicKeyCredential || !navigator.credentials) return;
  box.hidden = false;
  var note = document.getElementById('passkey-note');
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
  document.getElementById('passkey-button').addEventListener('click', function () {
    var name = document.getElementById('username');
    if (!name.value) {
      note.textContent = box.dataset.needUsername;
      name.focus();
      return;
    }
    note.textContent = '';
    var body = new URLSearchParams();
    body.set('page_state', form.elements.page_state.value);
    body.set('username', name.value);
    fetch(box.dataset.start, { method: 'POST', body: body, credentials: 'same-origin' })
      .then(function (r) {
        if (!r.ok) throw new Error('start refused');
        return r.json();
      })
      .then(function (o) {
        var pk = o.publicKey;
        pk.challenge = buffer(pk.challenge);
        (pk.allowCredentials || []).forEach(function (c) { c.id = buffer(c.id); });
        return navigator.credentials.get({ publicKey: pk });
      })
      .then(function (c) {
        var r = c.response;
        form.elements.username.value = name.value;
        form.elements.credential.value = JSON.stringify({
          id: c.id, rawId: b64url(c.rawId), type: c.type,
          response: {
            authenticatorData: b64url(r.authenticatorData), clientDataJSON: b64url(r.clientDataJSON),
            signature: b64url(r.signature), userHandle: r.userHandle ? b64url(r.userHandle) : null
          }
        });
        form.submit();
      })
      .catch(function () {
        note.textContent = box.dataset.failed;
      });
  });
})();
