"""What both servers and the operator CLI share: settings, start-up, the request id and access log."""
