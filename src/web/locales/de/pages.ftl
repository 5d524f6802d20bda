# Für alle Seiten.
hello = Hallo, { $name }
error-invalid-request = Ungültige Anfrage
error-forbidden = Nicht erlaubt
error-not-found = Nicht gefunden
error-unavailable = Vorübergehend nicht verfügbar
error-other = Etwas ist schiefgegangen
