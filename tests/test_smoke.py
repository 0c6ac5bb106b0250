async def test_health(client):
    response = await client.get("/api/v1/health")
    assert response.status_code == 200
    body = await response.get_json()
    assert body["status"] == "ok"
