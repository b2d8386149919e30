from textkit import camel_case, snake_case


def test_snake_case_from_camel():
    assert snake_case("helloWorld") == "hello_world"
    assert snake_case("HelloWorld") == "hello_world"


def test_snake_case_from_kebab():
    assert snake_case("hello-big world") == "hello_big_world"


def test_camel_case():
    assert camel_case("hello_big_world") == "helloBigWorld"
