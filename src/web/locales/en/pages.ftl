# Shared by every page.
hello = Hello, { $name }
error-invalid-request = Invalid request
error-forbidden = Forbidden
error-not-found = Not found
error-unavailable = Temporarily unavailable
error-other = Something went wrong
