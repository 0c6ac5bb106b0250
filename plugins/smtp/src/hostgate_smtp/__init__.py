"""hostgate-smtp: the ``smtp`` notification channel over aiosmtplib."""
