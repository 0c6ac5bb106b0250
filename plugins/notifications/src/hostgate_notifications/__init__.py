"""hostgate-notifications: the notification rules engine and the delivery log.

Channels' stored config, rules, matching, digests, the delivery queue and its log;
channel packs (``hostgate-smtp``, ``hostgate-chat``) register ``ChannelSpec``s whose
``send`` this pack calls.
"""
